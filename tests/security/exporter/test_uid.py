#!/usr/bin/env python3
"""Who may feed the figures (issue 20, finding 5): with --binary PATH, any
local user who runs the file at PATH adds to the business metrics.
Replayed: the attacker runs the very file root's service runs and fires
its probes; with --uid 0 only root's fires are counted, exactly; without
--uid both are (the attack is real here, so the --uid check cannot pass by
accident).  The stats path: a segment the attacker drops into a
--stats-dir anyone may write to (sticky, as /dev/shm) is not the
directory's user's, so it is skipped, with --uid and without (one line,
billing_exporter_stats_segments_skipped{reason="uid"}).

On the code before there was no --uid; then (issue 30) without --uid the
attacker's segment was summed.  Needs root (BPF; another user)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
uid, gid, as_attacker = bt.attacker()
OWN, THEIRS = 300, 7

tmp = tempfile.mkdtemp(prefix="bx-uid-")
os.chmod(tmp, 0o755)
service = os.path.join(tmp, "billing-service")
shutil.copy(fire, service)
os.chmod(service, 0o755)


def counted(*limit):
    """billing_requests_total of the service's handler with root's and the
    attacker's processes both firing, the exporter given --binary and limit."""
    ex = own = theirs = None
    try:
        ex = h.Exporter(exe, "--binary", service, *limit)
        own = h.FireProgram(service, "threads", "1", str(OWN))
        theirs = h.FireProgram(*as_attacker, service, "threads", "1", str(THEIRS))
        bt.check(os.stat("/proc/%d" % theirs.pid).st_uid == uid, "the attacker's copy runs as uid %d" % uid)
        own.fired()
        theirs.fired()
        return h.total(ex.samples(), "billing_requests_total", handler="threads.same")
    finally:
        for p in (own, theirs):
            if p:
                p.release()
        if ex:
            ex.stop()


try:
    got = counted()
    bt.check(got == OWN + THEIRS, "without --uid both users' fires count (%s of %d + %d): the attack is real"
             % (got, OWN, THEIRS))
    try:
        got = counted("--uid", "0")
    except RuntimeError as e:
        got = "no exporter: " + str(e).strip().splitlines()[-1]
    bt.check(got == OWN, "--uid 0: root's %d fires only, the attacker's %d left out (got %s)" % (OWN, THEIRS, got))

    # the stats path: a directory of segments any user can write (as /dev/shm)
    workload = st.stats_workload(tmp)
    if workload:
        # each user's writer keeps its segment in a directory of its own
        # (the writer insists); the attacker then drops its segment into a
        # directory anyone may write to (as /dev/shm), which root reads
        segments = os.path.join(tmp, "segments")
        os.mkdir(segments)
        os.chmod(segments, 0o1777)
        for who, n, owner in (([], OWN, 0), (as_attacker, THEIRS, uid)):
            own_dir = os.path.join(tmp, "own-%d" % owner)
            os.mkdir(own_dir, 0o700)
            os.chown(own_dir, owner, -1)
            env = dict(os.environ, BILLING_STATS_DIR=own_dir)
            r = subprocess.run([*who, workload, "threads", "1", str(n)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            made = [f for f in os.listdir(own_dir) if f.endswith(".stats")]
            for f in made:
                subprocess.run([*who, "cp", os.path.join(own_dir, f), segments], check=True)
            bt.check(r.returncode == 0 and len(made) == 1, "stats workload as uid %d: %d fires, one segment (%s)"
                     % (owner, n, r.stdout.strip()[-200:]))
        for limit in ([], ["--uid", "0"]):
            r = bt.run([exe, "--stats-dir", segments, "--once", "--interval", "1", "--format", "json", *limit],
                       timeout=60)
            docs = list(map(json.loads, r.stdout.splitlines()))
            total = sum(d["value"] for d in docs if d.get("metric") == "billing_payments_total")
            skipped = sum(d["value"] for d in docs if d.get("metric") == "billing_exporter_stats_segments_skipped"
                          and d["labels"]["reason"] == "uid")
            said = [x for x in r.stderr.splitlines() if "belongs to uid %d" % uid in x and x.endswith("skipped")]
            bt.check(r.returncode == 0 and total == OWN and skipped == 1 and len(said) == 1,
                     "--stats-dir %s: payments %s, want %d, the attacker's segment skipped (gauge %s), said once "
                     "(rc %d %s)" % (" ".join(limit) or "without --uid", total, OWN, skipped, r.returncode,
                                     r.stderr.strip()[-300:]))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

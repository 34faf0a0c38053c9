#!/usr/bin/env python3
"""Who may feed the figures, by cgroup (issue 20): with --binary PATH (or a
--stats-dir), every process that runs the file (or writes a segment there)
adds to the business metrics, whatever service it belongs to.  --cgroup DIR
counts only processes in that cgroup v2 or below it, on both paths.

Replayed in a cgroup2 hierarchy mounted in a private temporary directory
(this host may mount only cgroup v1): one copy of a probe-firing program in
the service's cgroup, one in a child cgroup of it (run as the attacker, so
that --uid combined with --cgroup shows both must hold), one outside.  The
totals must be exactly the inside ones; without --cgroup they are all three
(the attack is real, so the filter cannot pass by accident).  The stats
path alike, with segment writers still running in the same three places
(the child's as the attacker, in a directory of its own), plus a writer in
the cgroup that exited before the exporter looked: its cgroup cannot be
told, so it is skipped and reported.  And a segment the attacker forges in
its own directory, its header naming root's writer in the cgroup (PID and
start time are public): a segment is attributed to the process the kernel
shows only when that process runs as the file's user, so it is skipped.

On the code before there was no --cgroup; then (issue 30) the forged
segment was summed as the named process's.  Needs root (BPF, mount)."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
uid, gid, as_attacker = bt.attacker()
INSIDE, CHILD, OUTSIDE, GONE, FORGED = 300, 40, 7, 11, 5000

tmp = tempfile.mkdtemp(prefix="bx-cgroup-")
os.chmod(tmp, 0o755)
mnt = os.path.join(tmp, "cgroup2")
os.mkdir(mnt)
r = subprocess.run(["mount", "-t", "cgroup2", "none", mnt], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                   text=True)
if r.returncode != 0:
    shutil.rmtree(tmp, ignore_errors=True)
    bt.skip("cannot mount a cgroup2 file system here: %s" % r.stdout.strip())
service_cg = os.path.join(mnt, "bx-test-service-%d" % os.getpid())
child_cg = os.path.join(service_cg, "worker")
service = os.path.join(tmp, "billing-service")
shutil.copy(fire, service)
os.chmod(service, 0o755)
procs = []


def in_cgroup(cg, argv):
    """argv run as a process that has joined cg (None: stay where the test
    runs, outside the service's cgroup) before it starts."""
    if cg is None:
        return argv
    return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cg, *argv]


def placed(pid, cg):
    """Is process pid in cg (None: outside the service's cgroup)?"""
    with open("/proc/%d/cgroup" % pid) as f:
        got = [line.strip()[3:] for line in f if line.startswith("0::")][0]
    if cg:
        return got == "/" + os.path.relpath(cg, mnt)
    return not got.startswith("/" + os.path.basename(service_cg))


def counted(*limit):
    """billing_requests_total of the service's handler with the three copies
    firing, the exporter given --binary and limit."""
    ex = None
    copies = []
    try:
        ex = h.Exporter(exe, "--binary", service, *limit)
        for cg, who, n in ((service_cg, [], INSIDE), (child_cg, as_attacker, CHILD), (None, [], OUTSIDE)):
            p = h.FireProgram(*in_cgroup(cg, [*who, service, "threads", "1", str(n)]))
            copies.append(p)
            bt.check(placed(p.pid, cg), "copy of %d fires runs in %s" % (n, cg or "the test's cgroup"))
        for p in copies:
            p.fired()
        return h.total(ex.samples(), "billing_requests_total", handler="threads.same")
    finally:
        for p in copies:
            p.release()
        if ex:
            ex.stop()


def snapshot(dirs, *limit):
    """(payments total, skipped-segment gauges, rc, stderr) of one --once run."""
    r = bt.run([exe, *(a for d in dirs for a in ("--stats-dir", d)), "--once", "--interval", "1", "--format", "json",
                *limit], timeout=60)
    docs = [json.loads(line) for line in r.stdout.splitlines()]
    total = sum(d["value"] for d in docs if d.get("metric") == "billing_payments_total")
    skipped = {d["labels"]["reason"]: d["value"] for d in docs
               if d.get("metric") == "billing_exporter_stats_segments_skipped"}
    return total, skipped, r.returncode, r.stderr


try:
    os.mkdir(service_cg)
    os.mkdir(child_cg)

    # the USDT path
    got = counted()
    bt.check(got == INSIDE + CHILD + OUTSIDE, "without --cgroup every copy counts (%s of %d + %d + %d): the attack "
             "is real" % (got, INSIDE, CHILD, OUTSIDE))
    for limit, want in ((["--cgroup", service_cg], INSIDE + CHILD),
                        (["--cgroup", child_cg], CHILD),
                        (["--cgroup", service_cg, "--uid", "0"], INSIDE),
                        (["--cgroup", child_cg, "--uid", "0"], 0)):
        try:
            got = counted(*limit)
        except RuntimeError as e:
            got = "no exporter: " + str(e).strip().splitlines()[-1]
        bt.check(got == want, "--binary %s: %s fires counted, want exactly %d"
                 % (" ".join(limit).replace(tmp, "TMP"), got, want))

    # the stats path: writers still running, in the same three places
    workload = st.stats_workload(tmp)
    if workload:
        segments = os.path.join(tmp, "segments")
        os.mkdir(segments, 0o700)
        # each user's writer insists on a directory of its own; named as
        # the writer names it by default, the exporter expects that user's
        theirs = os.path.join(tmp, "billing-stats-%d" % uid)
        os.mkdir(theirs, 0o700)
        os.chown(theirs, uid, gid)
        dirs = [segments, theirs]
        # one writer of the service that has exited: its cgroup is unknown now
        r = subprocess.run(in_cgroup(service_cg, [workload, "threads", "1", str(GONE)]),
                           env=dict(os.environ, BILLING_STATS_DIR=segments),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        bt.check(r.returncode == 0, "an exited writer in the service's cgroup (%s)" % r.stdout.strip()[-200:])
        for cg, who, where, n in ((service_cg, [], segments, INSIDE), (child_cg, as_attacker, theirs, CHILD),
                                  (None, [], segments, OUTSIDE)):
            p = subprocess.Popen(in_cgroup(cg, [*who, workload, "hold", str(n)]),
                                 env=dict(os.environ, BILLING_STATS_DIR=where), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            procs.append(p)
            line = p.stdout.readline()
            bt.check(line.startswith("segment ") and placed(p.pid, cg),
                     "stats writer of %d fires running in %s (%r)" % (n, cg or "the test's cgroup", line))
        # the attacker's forgery: a segment of its own, the header naming
        # root's running writer in the service's cgroup
        forge_dir = os.path.join(tmp, "forge")
        os.mkdir(forge_dir, 0o700)
        os.chown(forge_dir, uid, gid)
        r = subprocess.run([*as_attacker, workload, "threads", "1", str(FORGED)],
                           env=dict(os.environ, BILLING_STATS_DIR=forge_dir), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        inside = procs[0].pid
        forged = bytearray(open(os.path.join(forge_dir, os.listdir(forge_dir)[0]), "rb").read())
        with open("/proc/%d/stat" % inside) as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        struct.pack_into("<I", forged, 32, inside)  # struct bs_header: pid, then state, then start_time
        struct.pack_into("<Q", forged, 40, start)
        forged_path = os.path.join(theirs, "%d.stats" % inside)
        with open(forged_path, "wb") as f:
            f.write(forged)
        os.chown(forged_path, uid, gid)
        os.chmod(forged_path, 0o600)
        bt.check(r.returncode == 0, "the attacker's forged segment of %d payments names pid %d" % (FORGED, inside))
        for limit, want, skipped, where in (
                ([], INSIDE + CHILD + OUTSIDE + GONE + FORGED, {}, dirs),
                (["--cgroup", service_cg], INSIDE + CHILD, {"cgroup": 1, "unattributed": 2}, dirs),
                (["--cgroup", child_cg], CHILD, {"cgroup": 2, "unattributed": 2}, dirs),
                (["--cgroup", service_cg, "--uid", "0"], INSIDE, {"cgroup": 1, "unattributed": 1}, [segments])):
            total, gauges, rc, err = snapshot(where, *limit)
            skipped = dict({"unreadable": 0, "uid": 0, "cgroup": 0, "unattributed": 0}, **skipped)
            named = "--stats-dir %s" % (" ".join(limit).replace(tmp, "TMP") or "without --cgroup")
            bt.check(rc == 0 and total == want, "%s: payments %s, want exactly %d (rc %d %s)"
                     % (named, total, want, rc, err.strip()[-300:]))
            bt.check(gauges == skipped, "%s: billing_exporter_stats_segments_skipped %s, want %s"
                     % (named, gauges, skipped))
            lines = [x for x in err.splitlines() if x.endswith("(--cgroup): skipped")]
            bt.check(len(lines) == skipped["cgroup"] + skipped["unattributed"]
                     and (not limit or any("is gone" in x for x in lines)),
                     "%s: one stderr line per segment --cgroup skipped, the exited writer's among them: %r"
                     % (named, lines))
        total, gauges, rc, err = snapshot(dirs, "--cgroup", service_cg, "--uid", "0")
        bt.check(rc == 2 and "belongs to uid %d" % uid in err and len(err.strip().splitlines()) <= 2,
                 "--uid 0 with the attacker's directory: refused, exit 2, whose it is said (%d %r)" % (rc, err))
finally:
    for p in procs:
        try:
            p.stdin.close()
            p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            p.kill()
            p.wait()
    for cg in (child_cg, service_cg):
        for _ in range(50):  # a process that just exited leaves its cgroup a moment later
            try:
                if os.path.isdir(cg):
                    os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)
    subprocess.run(["umount", mnt])
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

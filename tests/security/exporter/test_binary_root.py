#!/usr/bin/env python3
"""--binary PATH counts the service, not whoever can name a file PATH in
a root of his own (issue 34, findings 1 and 2).  Replayed: the attacker
gives each of his processes a mount namespace of its own (unshare -Urm,
allowed here) with his own copy of the program bind-mounted over PATH,
and fires from it; the root exporter, its descriptors limited, counts
root's service, then the service's rollout (a new inode at PATH).

Wanted: every attacker file refused in one line, once, and not attached;
the service's fires and then its rollout's counted exactly.  On the code
before, each attacker file was attached ("a file not seen before"), his
fires counted as the service's, and his files took the descriptors the
rollout needed: it was not counted, with no line.  Needs root (BPF;
another user)."""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
uid, gid, as_attacker = bt.attacker()
unshare = bt.require_program("unshare", "util-linux")
prlimit = bt.require_program("prlimit", "util-linux")
ATTACKERS, OWN, THEIRS, ROLLED = 12, 300, 7, 40
# descriptors left to the exporter beyond what it holds once ready: room
# for the rollout's file, not for the attacker's dozen (4 or more each)
SPARE = 16
REFUSED = "not counted, not attached"

tmp = tempfile.mkdtemp(prefix="bx-binary-root-")
os.chmod(tmp, 0o755)
service = os.path.join(tmp, "billing-service")
shutil.copy(fire, service)
os.chmod(service, 0o755)
theirs_dir = os.path.join(tmp, "attacker")
os.mkdir(theirs_dir, 0o755)
os.chown(theirs_dir, uid, gid)
copies = []
for i in range(ATTACKERS):
    copy = os.path.join(theirs_dir, "billing-service-%d" % i)
    shutil.copy(fire, copy)
    os.chown(copy, uid, gid)
    os.chmod(copy, 0o755)
    copies.append(copy)
# each attacker process: its own user and mount namespace, its own file at PATH
OWN_ROOT = 'mount --bind "$1" "$2" && exec "$2" go 1 %d' % THEIRS


def wait_for(test, timeout=30):
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


ex, procs = None, []
try:
    ex = h.Exporter(prlimit, "--nofile=4096:4096", exe, "--binary", service, "--interval", "1")
    held = len(os.listdir("/proc/%d/fd" % ex.proc.pid))
    limit = held + SPARE
    bt.run([prlimit, "--pid", str(ex.proc.pid), "--nofile=%d:%d" % (limit, limit)], check=True)
    own = h.FireProgram(service, "threads", "1", str(OWN))
    procs.append(own)
    own.fired()

    attackers = [h.FireProgram(*as_attacker, unshare, "-Urm", "sh", "-c", OWN_ROOT, "sh", c, service)
                 for c in copies]
    procs += attackers
    bt.check(all(os.stat("/proc/%d" % a.pid).st_uid == uid for a in attackers),
             "%d attacker processes run as uid %d, each with its own file at %s" % (ATTACKERS, uid, service))
    # the exporter has looked at each (refused it, or attached it)
    looked = wait_for(lambda: all(
        "process %d " % a.pid in ex.output() or "/proc/%d/root" % a.pid in ex.output() for a in attackers))
    bt.check(looked, "the exporter looked at every attacker process within 30 s")
    for a in attackers:
        a.proc.stdin.write("\n")
        a.proc.stdin.flush()
    for a in attackers:
        try:
            a.fired(timeout=30)
        except RuntimeError as e:
            bt.check(False, "attacker process %d fired: %s" % (a.pid, str(e)[:200]))

    # the service's rollout: a new inode at PATH, started by root
    rollout = st.roll_out(fire, service, ROLLED, procs)
    got = h.total(ex.samples(), "billing_requests_total", handler="threads.same")
    out = ex.output()
    refused = [x for x in out.splitlines() if REFUSED in x]
    attached = [x for x in out.splitlines() if "a file not seen before" in x]
    bt.check(rollout == "fired", "the rollout's program saw the exporter attached (%s)" % rollout)
    bt.check(got == OWN + ROLLED, "billing_requests_total: %s, want the service's %d + the rollout's %d exactly "
             "(the attacker's %d x %d left out)" % (got, OWN, ROLLED, ATTACKERS, THEIRS))
    bt.check(len(refused) == ATTACKERS and all("uid %d" % uid in x for x in refused),
             "one line for each attacker file, once: %d of %d (%s)" % (len(refused), ATTACKERS,
                                                                       (refused or attached or [""])[0][:300]))
    bt.check(len(attached) == 1, "one file attached after start, the rollout's: %d (%s)"
             % (len(attached), " | ".join(attached)[:400]))
    fds = len(os.listdir("/proc/%d/fd" % ex.proc.pid))
    bt.check(fds <= limit, "descriptors: %d held, limit %d" % (fds, limit))
finally:
    for p in procs:
        p.release()
    if ex:
        ex.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

#!/usr/bin/env python3
"""Files per --binary PATH are bounded and released, and the service's
own rollout always counts (issue 34, finding 2).  Replayed: root-made
mount namespaces (containers of root: files the --binary rule admits)
each run their own copy of the program at PATH, more than the cap; then
the service is rolled out (a new inode at PATH here); then the
containers stop.

Wanted: the cap's line once, the copies beyond it not attached, the
rollout counted exactly; once no process has run them for the idle
time (--idle-detach), every file but the rollout's detached (one line
each) and their descriptors released.  On the code before there was no cap and
no detach: every file was attached, and with them their descriptors, for
good.  Needs root (BPF; mount namespaces)."""
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
unshare = bt.require_program("unshare", "util-linux")
# BX_FILES_PER_PATH, from the header that sets it
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "billing-exporter",
                       "targets", "program_files.h")) as f:
    HEADER = f.read()
CAP = int(re.search(r"#define BX_FILES_PER_PATH (\d+)", HEADER).group(1))
# --idle-detach: shorter than the default so the test does not wait it out,
# and 5 looks through /proc (one a second) for a running container's file
IDLE = 5
DETACHED = "no process has run it for %d s: detached" % IDLE
EXTRA, ROLLED = 4, 40
CAPPED = "(the cap)"
# each container: a mount namespace of root's, its own file at PATH
OWN_ROOT = 'mount --bind "$1" "$2" && exec "$2" go 1 1'

tmp = tempfile.mkdtemp(prefix="bx-binary-cap-")
os.chmod(tmp, 0o755)
service = os.path.join(tmp, "billing-service")
shutil.copy(fire, service)
os.chmod(service, 0o755)
copies = []
for i in range(CAP + EXTRA):
    copy = os.path.join(tmp, "image-%d" % i)
    shutil.copy(fire, copy)
    os.chmod(copy, 0o755)
    copies.append(copy)


def wait_for(test, timeout=30):
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


ex, procs = None, []
try:
    ex = h.Exporter(exe, "--binary", service, "--interval", "1", "--idle-detach", str(IDLE))
    containers = [h.FireProgram(unshare, "-m", "--propagation", "private", "sh", "-c", OWN_ROOT, "sh", c, service)
                  for c in copies]
    procs += containers
    # the exporter has looked at every container: attached its file, or said the cap once
    looked = wait_for(lambda: ex.output().count("a file not seen before") >= CAP - 1 and
                      (CAPPED in ex.output() or ex.output().count("a file not seen before") >= CAP + EXTRA))
    bt.check(looked, "the exporter looked at %d containers' files within 30 s" % len(containers))
    attached = ex.output().count("a file not seen before")

    rollout = st.roll_out(fire, service, ROLLED, procs)
    got = h.total(ex.samples(), "billing_requests_total", handler="threads.same")
    out = ex.output()
    capped = [x for x in out.splitlines() if CAPPED in x]
    bt.check(attached == CAP - 1, "files attached beside the one here: %d, want the cap %d less the file here"
             % (attached, CAP))
    bt.check(len(capped) == 1, "the cap said once: %d lines (%s)" % (len(capped), (capped or [""])[0][:300]))
    bt.check(rollout == "fired", "the rollout's program saw the exporter attached (%s)" % rollout)
    bt.check(got == ROLLED, "billing_requests_total: %s, want the rollout's %d exactly" % (got, ROLLED))

    # the containers stop: their files, and the file the rollout replaced, are idle
    held = len(os.listdir("/proc/%d/fd" % ex.proc.pid))
    for c in containers:
        c.proc.kill()
        c.proc.wait()
    gone = wait_for(lambda: ex.output().count(DETACHED) >= CAP, timeout=IDLE + 15)
    detached = [x for x in ex.output().splitlines() if DETACHED in x]
    fds = len(os.listdir("/proc/%d/fd" % ex.proc.pid))
    bt.check(gone and len(detached) == CAP, "idle files detached, one line each: %d, want the %d containers' "
             "attached and the one the rollout replaced" % (len(detached), CAP - 1))
    bt.check(fds <= held - CAP, "descriptors released, one link at least for each file detached: %d held "
             "before, %d after" % (held, fds))
    got = h.total(ex.samples(), "billing_requests_total", handler="threads.same")
    bt.check(got == ROLLED, "after the detaches billing_requests_total is still the rollout's %d: %s" % (ROLLED, got))
finally:
    for p in procs:
        p.release()
    if ex:
        ex.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

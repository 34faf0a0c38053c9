#!/usr/bin/env python3
"""Files per --binary PATH are bounded, and the service's own rollout
always counts (issue 34, finding 2).  Replayed: root-made mount
namespaces (containers of root: files the --binary rule admits) each run
their own copy of the program at PATH, more than the cap; then the
service is rolled out (a new inode at PATH here).

Wanted: the cap's line once, the copies beyond it not attached, and the
rollout counted exactly.  On the code before there was no cap: every
file was attached, and with them their descriptors, for good.  Needs
root (BPF; mount namespaces)."""
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
unshare = bt.require_program("unshare", "util-linux")
# BX_FILES_PER_PATH, from the header that sets it
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "billing-exporter",
                       "program_files.h")) as f:
    CAP = int(re.search(r"#define BX_FILES_PER_PATH (\d+)", f.read()).group(1))
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
    ex = h.Exporter(exe, "--binary", service, "--interval", "1")
    containers = [h.FireProgram(unshare, "-m", "--propagation", "private", "sh", "-c", OWN_ROOT, "sh", c, service)
                  for c in copies]
    procs += containers
    # the exporter has looked at every container: attached its file, or said the cap once
    looked = wait_for(lambda: ex.output().count("a file not seen before") >= CAP - 1 and
                      (CAPPED in ex.output() or ex.output().count("a file not seen before") >= CAP + EXTRA))
    bt.check(looked, "the exporter looked at %d containers' files within 30 s" % len(containers))
    attached = ex.output().count("a file not seen before")

    new = service + ".new"
    shutil.copy(fire, new)
    os.chmod(new, 0o755)
    os.rename(new, service)
    try:
        rolled = h.FireProgram(service, "threads", "1", str(ROLLED))
        procs.append(rolled)
        rolled.fired(timeout=40)
        rollout = "fired"
    except RuntimeError as e:
        rollout = "not counted: " + str(e).strip().splitlines()[0][:200]
    got = h.total(ex.samples(), "billing_requests_total", handler="threads.same")
    out = ex.output()
    capped = [x for x in out.splitlines() if CAPPED in x]
    bt.check(attached == CAP - 1, "files attached beside the one here: %d, want the cap %d less the file here"
             % (attached, CAP))
    bt.check(len(capped) == 1, "the cap said once: %d lines (%s)" % (len(capped), (capped or [""])[0][:300]))
    bt.check(rollout == "fired", "the rollout's program saw the exporter attached (%s)" % rollout)
    bt.check(got == ROLLED, "billing_requests_total: %s, want the rollout's %d exactly" % (got, ROLLED))
finally:
    for p in procs:
        p.release()
    if ex:
        ex.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

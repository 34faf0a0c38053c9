#!/usr/bin/env python3
"""One hostile target among several (issue 20, finding 7): an unprivileged
local user runs a program whose billing note has an argument spec the
probe reader accepts and libbpf does not (bad_note.c).  Root's exporter,
given `--pid GOOD --pid BAD`, must say so in one line, skip BAD, and count
GOOD exactly; BAD's target_up is 0; SIGTERM ends it with 0.

On the code before, the exporter exited 2 and GOOD went unwatched.
Needs root (BPF, and acting as another user)."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
if len(sys.argv) < 2:
    bt.skip("give the path of bad_note (meson test does)")
bad_note = sys.argv[1]
uid, gid, as_attacker = bt.attacker()

# the attacker's copy, in a directory it can reach
tmp = tempfile.mkdtemp(prefix="bx-badtarget-")
os.chmod(tmp, 0o755)
bad_copy = os.path.join(tmp, "bad_note")
shutil.copy(bad_note, bad_copy)
os.chmod(bad_copy, 0o755)

good = bad = ex = None
try:
    bad = h.FireProgram(as_attacker[0], *as_attacker[1:], bad_copy)
    bad_pid = bad.pid  # setpriv execs the program: one process
    bt.check(os.stat("/proc/%d" % bad_pid).st_uid == uid, "BAD (pid %d) runs as the attacker, uid %d" % (bad_pid, uid))
    good = h.FireProgram(fire, "threads", "2", "500")
    try:
        ex = h.Exporter(exe, "--pid", str(good.pid), "--pid", str(bad_pid), "--metrics", "business,requests")
        started = True
    except RuntimeError as e:
        started, why = False, str(e)
    bt.check(started, "the exporter serves with a refused target among its targets%s"
             % ("" if started else " (it did not: %s)" % why.strip().replace("\n", " | ")[-300:]))
    if started:
        lines = [l for l in ex.output().splitlines() if "pid:%d" % bad_pid in l and "skipped" in l
                 and "invoice__create" in l]
        bt.check(len(lines) == 1, "one line names BAD's refused probe and says it is skipped (%s)"
                 % (lines or ex.output()))
        fired = good.fired()
        s = ex.samples()
        got = h.total(s, "billing_requests_total", handler="threads.same")
        bt.check(got == fired["request_done"], "GOOD is counted exactly: %s of %d requests" % (got, fired["request_done"]))
        bt.check(h.total(s, "billing_exporter_target_up", target="pid:%d" % bad_pid) == 0 and
                 h.total(s, "billing_exporter_target_up", target="pid:%d" % good.pid) == 1,
                 "target_up: GOOD 1, BAD 0")
        rc, _ = ex.stop()
        ex = None
        bt.check(rc == 0, "the exporter exits 0 on SIGTERM (rc=%s)" % rc)
finally:
    if ex:
        ex.stop()
    for p in (good, bad):
        if p:
            p.release()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

#!/usr/bin/env python3
"""Semaphores: raised while the exporter is attached, back to 0 after it
exits, by SIGTERM and by SIGKILL (libbpf attaches through the kernel's
uprobe reference counters), as billing-probes list PID reads them."""
import faulthandler
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
# One fresh-clone run hung in the SIGKILL round without a word: where it
# waits is printed before meson's 120 s are up.
faulthandler.dump_traceback_later(100, exit=False)
exe, tool, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_TOOL"), h.env_path("BX_FIRE_SHARED")

prog = h.FireProgram(fire, "spans", "10")
try:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        name = signal.Signals(sig).name
        ex = h.Exporter(exe, "--pid", str(prog.pid))
        try:
            during = h.semaphores(tool, prog.pid)
        finally:
            rc, out = ex.stop(sig)
        after = h.semaphores(tool, prog.pid)
        bt.check(during.get("request__done") and all(t == "yes" for t in during["request__done"]),
                 "%s: request__done traced in every module while attached: %s"
                 % (name, during.get("request__done")))
        bt.check(all(t == "no" for t in during.get("request__start", ["no"])),
                 "%s: request__start not raised (durations come from -done)" % name)
        bt.check(after and all(t == "no" for ts in after.values() for t in ts),
                 "%s: every semaphore back to 0 after exit: %s" % (name, after))
        if sig == signal.SIGTERM:
            bt.check(rc == 0, "SIGTERM: exit 0 (%s)" % rc)
            prog.fired()  # it fired once attached; keep it waiting for the next round
finally:
    prog.release()
bt.finish()

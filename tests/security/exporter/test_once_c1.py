#!/usr/bin/env python3
"""C1 controls through --once (issue 34, requirement 7): a service names a
gateway "c1-" U+009B "J" (UTF-8 \\xc2\\x9b, the one-byte CSI: erase the
screen below on a terminal that takes 8-bit controls).  It is valid UTF-8, so
/metrics keeps it (with exposition escaping); the --once table goes to a
terminal and must show it through the tools' one escaper (\\xc2\\x9b),
every row plain printable ASCII.

On the code before, the table carried the two bytes raw.  Needs root (BPF)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")

prog = h.FireProgram(fire, "hostile")
try:
    p = subprocess.run([exe, "--pid", str(prog.pid), "--once", "--interval", "2"],
                       capture_output=True, timeout=60)
finally:
    prog.release()
out = p.stdout
rows = [l for l in out.splitlines() if l.startswith(b"billing_payments_total{")]
bt.check(p.returncode == 0 and rows, "--once prints payments rows (rc %d, %s)"
         % (p.returncode, p.stderr.decode(errors="replace").strip()[-200:]))
bt.check(b"\xc2\x9b" not in out and b"\x9b" not in out, "no raw C1 CSI in the table")
bt.check(any(b"c1-\\xc2\\x9bJ" in r for r in rows),
         "the C1 gateway shown escaped: %r" % [r for r in rows if b"c1-" in r])
bad = [l for l in out.splitlines() if any(c < 0x20 or c >= 0x7f for c in l)]
bt.check(not bad, "every table row plain printable ASCII: %r" % bad[:3])
bt.finish()

#!/usr/bin/env python3
"""C1 controls through --once (issue 34, requirement 7): a service names a
gateway "c1-" U+009B "J" (UTF-8 \\xc2\\x9b, the one-byte CSI: erase the
screen below on a terminal that takes 8-bit controls).  It is valid UTF-8, so
/metrics keeps it (with exposition escaping); the --once table goes to a
terminal and must show it through the tools' one escaper (\\xc2\\x9b),
every row plain printable ASCII.  From both sources: the probes (USDT, as
root) and a stats segment (read as nobody, no BPF), with the same hostile
labels (fire_program hostile).

On the code before, the USDT table carried the two bytes raw.  Needs root
(BPF; running the exporter as nobody).

    test_once_c1.py [FIRE_STATS]    FIRE_STATS: fire_program in a stats build
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
fire_stats = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def check_table(source, p):
    out = p.stdout
    rows = [l for l in out.splitlines() if l.startswith(b"billing_payments_total{")]
    bt.check(p.returncode == 0 and rows, "%s: --once prints payments rows (rc %d, %s)"
             % (source, p.returncode, p.stderr.decode(errors="replace").strip()[-200:]))
    bt.check(b"\xc2\x9b" not in out and b"\x9b" not in out, "%s: no raw C1 CSI in the table" % source)
    bt.check(any(b"c1-\\xc2\\x9bJ" in r for r in rows),
             "%s: the C1 gateway shown escaped: %r" % (source, [r for r in rows if b"c1-" in r]))
    bad = [l for l in out.splitlines() if any(c < 0x20 or c >= 0x7f for c in l)]
    bt.check(not bad, "%s: every table row plain printable ASCII: %r" % (source, bad[:3]))


prog = h.FireProgram(fire, "hostile")
try:
    p = subprocess.run([exe, "--pid", str(prog.pid), "--once", "--interval", "2"],
                       capture_output=True, timeout=60)
finally:
    prog.release()
check_table("USDT", p)

if not fire_stats:
    bt.check(False, "the stats half has fire_program's stats build (meson passes it; a build without the "
                    "stats writer skips the test instead)")
else:
    # The segment's directory: the service's own, readable by nobody
    # through its group, as docs/stats.md sets it up.
    base = tempfile.mkdtemp(prefix="bx-once-c1-")
    os.chmod(base, 0o755)
    stats = os.path.join(base, "stats")
    env = dict(os.environ, BILLING_STATS_DIR=stats, BILLING_STATS_GROUP="nogroup")
    prog = subprocess.Popen([fire_stats, "hostile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        first = prog.stdout.readline()
        fired = prog.stdout.readline()
        bt.check(first.startswith(b"waiting pid") and fired.startswith(b"fired"),
                 "the stats build fired its hostile labels (%r %r)" % (first, fired))
        p = subprocess.run(NOBODY + [exe, "--stats-dir", stats, "--once", "--interval", "1"],
                           capture_output=True, timeout=60)
    finally:
        prog.kill()
        prog.wait()
        shutil.rmtree(base, ignore_errors=True)
    check_table("stats", p)
bt.finish()

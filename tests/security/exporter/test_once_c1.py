#!/usr/bin/env python3
"""C1 controls through --once (issue 34, requirement 7): a service names a
gateway "c1-" U+009B "J" (UTF-8 \\xc2\\x9b, the one-byte CSI: erase the
screen below on a terminal that takes 8-bit controls).  It is valid UTF-8, so
/metrics keeps it (with exposition escaping); the --once table goes to a
terminal and must show it through the tools' one escaper (\\xc2\\x9b),
every row plain printable ASCII.  The service is the unprivileged test
user's (fire_program hostile run as that user, from a copy any user may
run), read from both sources: its probes (USDT, the exporter as root with
--pid) and its stats segment (--stats-dir of that user's directory with
--uid, no BPF).

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
uid, gid, as_attacker = bt.attacker()
# the programs where the attacker may run them
place = tempfile.mkdtemp(prefix="bx-once-c1-")
os.chmod(place, 0o755)
for src in filter(None, (fire, fire_stats)):
    shutil.copy(src, place)
    os.chmod(os.path.join(place, os.path.basename(src)), 0o755)
fire = os.path.join(place, os.path.basename(fire))
fire_stats = fire_stats and os.path.join(place, os.path.basename(fire_stats))


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


prog = h.FireProgram(as_attacker[0], *as_attacker[1:], fire, "hostile")  # setpriv execs: the PID is fire's
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
    # The segment's directory: the attacker's own, read by root with --uid.
    stats = os.path.join(place, "stats")
    os.mkdir(stats, 0o700)
    os.chown(stats, uid, gid)
    os.environ["BILLING_STATS_DIR"] = stats
    prog = h.FireProgram(as_attacker[0], *as_attacker[1:], fire_stats, "hostile")
    try:
        fired = prog.fired(timeout=60)
        bt.check(fired.get("payment_auth", 0) > 0, "the stats build fired its hostile labels (%s)" % fired)
        p = subprocess.run([exe, "--stats-dir", stats, "--uid", str(uid), "--once", "--interval", "1"],
                           capture_output=True, timeout=60)
    finally:
        prog.release()
    check_table("stats", p)
shutil.rmtree(place, ignore_errors=True)
bt.finish()

#!/usr/bin/env python3
"""`billing-probes slow` reads what other users wrote (security round 3,
issue 46, findings 4 and 5), as root and as the service's user:

1. A service of the unprivileged test user renames its segment to a name
   of terminal control sequences (retitle, clear the screen, fake coloured
   text); `slow PID` and `slow --stats-dir` run by root print its trails
   with that name escaped: no byte outside printable ASCII reaches stdout
   or stderr.
2. --follow --stats-dir: a segment removed while it is followed (its
   process gone, its file cleaned up) is forgotten without a word; trails
   committed later are still printed, and Ctrl-C ends it with exit 0.
3. A sticky directory of the service's segments and one file the test
   user put there: `slow --stats-dir`, run as the service's user and as
   root, says in one stderr line that it skips that file, prints every
   trail of the service's segments, exit 0.

On the code before this test, the name reaches the terminal raw, a
removed segment ends --follow with exit 2, and the other user's file
makes `slow` refuse the whole directory."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading

import statstest as st
from statstest import bt

st.require_built()
BURST = os.environ.get("BS_TRAIL_BURST", "")
TOOL = os.environ.get("BS_TOOL", "")
WORKLOAD = os.environ.get("BS_TOP_WORKLOAD", "")
if not BURST or not TOOL or not WORKLOAD:
    bt.skip("trail_burst, top_workload or billing-probes not built (-Dtool=enabled)")
bt.require_root("acting as two local users")
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31mFAKE\x1b[0m.stats"  # retitle, clear, red text
TRAIL = re.compile(r"^SLOW REQUEST (\d+) ", re.M)
WORKLOAD_SLOW_ID = 0x10000000000 + 99  # top_workload's one slow request a batch


def printable(text):
    return all(c == "\n" or " " <= c <= "~" for c in text)


def slow(prefix, *args):
    p = subprocess.run(prefix + [TOOL, "slow"] + list(args), capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode("latin-1"), p.stderr.decode("latin-1")


def burst(prefix, d, slow_n, handler="payment.authorize"):
    """trail_burst's slow requests into d as prefix's user; its segment."""
    p = subprocess.run(prefix + [BURST, "1", str(slow_n), "0", handler], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, BILLING_STATS_DIR=d))
    bt.check(p.returncode == 0, f"trail_burst ran ({p.returncode}, {p.stderr.strip()[:200]})")
    return p.stdout.strip()


service_uid, _, as_service = bt.system_user("bp-slow-service")
attacker_uid, _, as_attacker = bt.attacker()
tmp = tempfile.mkdtemp(prefix="bp-slow-safe-")
os.chmod(tmp, 0o755)


def users_dir(uid, name=None):
    """A directory of uid's, named as the writer's default one is."""
    d = os.path.join(tmp, name or f"billing-stats-{uid}")
    os.mkdir(d, 0o700)
    os.chown(d, uid, -1)
    return d


workload = None
try:
    # --- 1. a segment's name of control sequences, printed by root ------------
    d = users_dir(attacker_uid)
    workload = subprocess.Popen(as_attacker + [WORKLOAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, env=dict(os.environ, BILLING_STATS_DIR=d))
    segment = workload.stdout.readline().split(" ", 1)[1].strip()
    bt.check(workload.stdout.readline().strip() == "ready", "the test user's service fired its first batch")
    renamed = os.path.join(d, HOSTILE)
    r = subprocess.run(as_attacker + ["mv", segment, renamed], capture_output=True, text=True)
    bt.check(r.returncode == 0, f"the test user renamed its segment ({r.stderr.strip()})")
    for args in ([str(workload.pid)], ["--stats-dir", d]):
        rc, out, err = slow([], *args)
        ids = [int(x) for x in TRAIL.findall(out)]
        bt.check(rc == 0 and ids == [WORKLOAD_SLOW_ID], f"slow {args[0]} as root: the service's trail ({rc}, {ids}, "
                                                        f"{err.strip()[:200]!r})")
        bt.check(printable(out) and printable(err) and "\x1b" not in out + err,
                 f"slow {args[0]}: nothing but printable ASCII reaches the terminal ({(out + err).count(chr(27))} "
                 "raw ESC bytes)")
        bt.check("\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mFAKE\\x1b[0m.stats" in out,
                 "the segment's name shown escaped, every byte named")
    workload.stdin.close()
    workload.wait(timeout=30)
    workload = None

    # --- 2. --follow: a segment removed while it is followed -------------------
    d = users_dir(service_uid, "follow")
    first, second = burst(as_service, d, 2), burst(as_service, d, 1, "invoice.create")
    f = subprocess.Popen(as_service + [TOOL, "slow", "--stats-dir", d, "--follow", "--interval", "0.2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(f.stdout), daemon=True)
    reader.start()
    bt.wait_for("--follow's first reading", lambda: any(s.startswith("# ") for s in lines), timeout=30)
    held = len(TRAIL.findall("".join(lines)))
    os.unlink(first)
    threading.Event().wait(1.2)  # five readings of the directory without the removed segment
    bt.check(f.poll() is None, f"--follow goes on after a segment is removed (exit {f.returncode})")
    burst(as_service, d, 3, "refund.create")
    bt.wait_for("the later trails", lambda: len(TRAIL.findall("".join(lines))) >= held + 3, timeout=30)
    bt.stop_process(f, signal.SIGINT)
    reader.join(timeout=10)
    err = f.stderr.read()
    bt.check(held == 3 and f.returncode == 0 and not err,
             f"--follow: 3 trails held, 3 later ones, exit 0 at Ctrl-C, nothing on stderr ({held}, {f.returncode}, "
             f"{err.strip()[:200]!r})")

    # --- 3. a sticky directory with another user's file -------------------------
    d = users_dir(service_uid)
    burst(as_service, d, 2)
    burst(as_service, d, 1, "invoice.create")
    os.chmod(d, 0o1777)  # shared, as /dev/shm is: each user's files their own
    r = subprocess.run(as_attacker + ["sh", "-c", f"printf 'not a segment' > '{d}/999999.stats'"],
                       capture_output=True, text=True)
    bt.check(r.returncode == 0, f"the test user put a file in the sticky directory ({r.stderr.strip()})")
    for who, prefix in (("the service's user", as_service), ("root", [])):
        rc, out, err = slow(prefix, "--stats-dir", d)
        said = err.strip().splitlines()
        bt.check(rc == 0 and len(TRAIL.findall(out)) == 3,
                 f"slow --stats-dir as {who}: the service's 3 trails, exit 0 ({rc}, {len(TRAIL.findall(out))})")
        bt.check(len(said) == 1 and "999999.stats" in said[0] and "skipped" in said[0],
                 f"as {who}: the other user's file skipped in one line ({said})")
finally:
    if workload:
        workload.kill()
        workload.wait()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

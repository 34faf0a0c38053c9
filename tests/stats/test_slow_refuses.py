#!/usr/bin/env python3
"""`billing-probes slow` refuses a target that holds no segment to read, in
one stderr line and exit 2, as `top` does (issue 45, requirement 4's fourth
point): nothing printed and exit 0 would read as a service without a slow
request.

1. An empty directory (a typo, a service not started): `slow --stats-dir
   D`, with --id and with --follow, says "no stats segment" naming D; a
   directory that does not exist is named with why.
2. A directory whose one *.stats is a file the checks refuse (a symbolic
   link): the same line, saying which file was left out.
3. A process that maps no segment: `slow PID` names the segment it lacks.
4. What is still read: a directory whose segments are of processes that
   have exited (a service that crashed): their trails are printed, and
   `--id` finds one, exit 0 (top refuses such a directory: it shows rates
   of running writers; a trail stays true after its writer is gone).

On the code before this test, 1, 2 and 3 print nothing and exit 0."""
import os
import re
import subprocess
import tempfile

import statstest as st
from statstest import bt

st.require_built()
BURST = os.environ.get("BS_TRAIL_BURST", "")
TOOL = os.environ.get("BS_TOOL", "")
if not BURST or not TOOL:
    bt.skip("trail_burst or billing-probes not built (-Dtool=enabled)")
TRAIL = re.compile(r"^SLOW REQUEST (\d+) ", re.M)
FIRST_ID = 2**32 + 1  # trail_burst's first request ID


def slow(*args):
    """(exit status, stdout, stderr); the status None when it still runs
    after 10 s (--follow waiting on a directory it should refuse)."""
    try:
        p = subprocess.run([TOOL, "slow"] + list(args), capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or ""
    return p.returncode, p.stdout, p.stderr


def refused(label, args, *words):
    rc, out, err = slow(*args)
    lines = err.splitlines()
    bt.check(rc == 2 and out == "" and len(lines) == 1 and all(w in lines[0] for w in words),
             f"{label}: refused in one line saying {words}, exit 2, nothing on stdout ({rc}, {out[:100]!r}, {err!r})")


with tempfile.TemporaryDirectory(prefix="bp-slow-refuses-") as tmp:
    # --- 1. an empty directory; one that does not exist ----------------------
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty, 0o700)
    for extra in ([], ["--id", str(FIRST_ID)], ["--follow", "--interval", "0.1"]):
        refused("slow --stats-dir EMPTY " + " ".join(extra), ["--stats-dir", empty] + extra,
                empty, "no stats segment")
    typo = os.path.join(tmp, "typo")
    refused("slow --stats-dir MISSING", ["--stats-dir", typo], typo, "No such file")

    # --- 2. only a file the checks refuse ---------------------------------------
    linked = os.path.join(tmp, "linked")
    os.mkdir(linked, 0o700)
    os.symlink("/dev/null", os.path.join(linked, "4242.stats"))
    refused("a directory whose one *.stats is a symbolic link", ["--stats-dir", linked],
            linked, "no stats segment", "1 file here left out", "4242.stats")

    # --- 3. a process that maps no segment -------------------------------------
    plain = subprocess.Popen(["sleep", "30"])
    try:
        refused("slow PID of a process without stats", [str(plain.pid)], "process %d" % plain.pid,
                "no stats segment")
    finally:
        plain.kill()
        plain.wait()

    # --- 4. segments of processes that have exited: still read -----------------
    gone = os.path.join(tmp, "gone")
    os.mkdir(gone, 0o700)
    r = subprocess.run([BURST, "1", "3", "2"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, BILLING_STATS_DIR=gone))
    bt.check(r.returncode == 0, f"trail_burst wrote 3 slow requests and exited ({r.returncode}, {r.stderr.strip()})")
    rc, out, err = slow("--stats-dir", gone)
    ids = sorted(int(x) for x in TRAIL.findall(out))
    bt.check(rc == 0 and ids == [FIRST_ID, FIRST_ID + 2, FIRST_ID + 4] and not err,  # slow and fast in turn
             f"an exited process's segment: its 3 trails printed, exit 0 ({rc}, {ids}, {err.strip()!r})")
    rc, out, err = slow("--stats-dir", gone, "--id", str(FIRST_ID + 2))
    bt.check(rc == 0 and [int(x) for x in TRAIL.findall(out)] == [FIRST_ID + 2] and not err,
             f"--id finds a trail of an exited process ({rc}, {TRAIL.findall(out)}, {err.strip()!r})")
bt.finish()

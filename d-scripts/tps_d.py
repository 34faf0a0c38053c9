#!/usr/bin/env python3
"""tps.d's table: transactions completed per second, and how many failed.

usage: tps_d.py [--dtrace DTRACE] [--script TPS_D] (-p PID | -c 'CMD ARGS')

Runs `DTRACE -s TPS_D -p PID` (default: dtrace from PATH, and the tps.d
beside this file; in share/billing-probes/d-scripts/function-sites/ the
function-site spelling beside it) and prints one line per whole second,
the layout of bpftrace/tps.bt:

    TIME         TXNS   FAILED  FAIL%  NOTE
    04:23:46        0        0      0  partial 131 ms
    04:23:47      135        0      0

tps.d keeps cumulative counts in 16 slots (second % 16) and prints them as
dtrace read them, with the latest tick's timestamp (tps.d's header says
why: nothing it has not printed is ever deleted).  A second is the growth
of its slot since the slot's last second was printed, taken from the first
snapshot that holds a tick past its end.  The snapshot must have been read
before the second 16 seconds later began (the slot is that second's too):
this program's monotonic clock bounds when dtrace read it, since dtrace
read it before printing it (the same clock as dtrace's timestamp on Linux;
one second of slack for systems where the two may drift).  A slot that has
not grown since is exact however late it was read: the seconds it stands
for had no transaction.  A second that cannot be shown exact is not
printed: its line says so, and the exit status is 1.  So is a run whose
last seconds dtrace never printed.

Ctrl-C (SIGINT) or SIGTERM is passed to dtrace, which prints its last
snapshot and exits; the exit status is dtrace's otherwise.  dtrace runs in
its own process group, so that a terminal's Ctrl-C reaches it once.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

NS = 1000000000
SLOTS = 16                     # tps.d: (timestamp / 1e9) % 16
SETTLE_NS = 10 * 1000000       # a tick this far past a second's end: every fire of it is stored
CLOCK_SLACK_NS = NS            # dtrace's timestamp against this program's clock
HEADER = "%-8s %8s %8s %6s  %s" % ("TIME", "TXNS", "FAILED", "FAIL%", "NOTE")


class Table:
    """Turns tps.d's snapshots into the per-second lines."""

    def __init__(self, write):
        self.write = write
        self.start_ns = self.wall_off = self.next_sec = None
        self.base = [(0, 0)] * SLOTS       # each slot's counts when its last second was printed
        self.clean = [True] * SLOTS        # ... and whether that snapshot held only seconds printed
        self.refused = 0
        self.done = False

    def begin(self, start_ns, wall_off):
        self.start_ns, self.wall_off = start_ns, wall_off
        self.next_sec = start_ns // NS

    def hms(self, sec):
        return time.strftime("%H:%M:%S", time.localtime((sec * NS + self.wall_off) // NS))

    def snapshot(self, slots, clock_ns, read_ns, exit_ns=None):
        """Prints every second the snapshot holds whole (with exit_ns: every
        second up to the exit, the last one partial)."""
        if self.next_sec is None or self.done:
            return
        end_ns = exit_ns if exit_ns is not None else clock_ns - SETTLE_NS
        while (self.next_sec + 1) * NS <= end_ns:
            self.second(self.next_sec, slots, read_ns, (self.next_sec + 1) * NS)
        if exit_ns is not None:
            if self.next_sec * NS < exit_ns:
                self.second(self.next_sec, slots, read_ns, exit_ns)
            self.done = True

    def second(self, sec, slots, read_ns, until_ns):
        k = sec % SLOTS
        now = slots.get(k, (0, 0))
        txns, failed = now[0] - self.base[k][0], now[1] - self.base[k][1]
        # Read before second sec + SLOTS began, the slot holds nothing of
        # it; and a slot that has not grown held nothing new at all.
        clean = read_ns + CLOCK_SLACK_NS < (sec + SLOTS) * NS or txns == 0
        if clean and self.clean[k]:
            covered_ms = (until_ns - max(sec * NS, self.start_ns)) // 1000000
            line = "%-8s %8d %8d %6d" % (self.hms(sec), txns, failed, failed * 100 // txns if txns else 0)
            self.write(line + ("  partial %d ms" % covered_ms if covered_ms < 1000 else ""))
        else:
            self.refused += 1
            self.write("%-8s  (not printed: dtrace read it %d s or more after it ended; its count "
                       "may hold a later second's)" % (self.hms(sec), SLOTS - 1))
        self.base[k], self.clean[k] = now, clean
        self.next_sec = sec + 1

    def finish(self):
        """At dtrace's exit: the seconds it never printed, if any."""
        if self.next_sec is not None and not self.done:
            self.refused += 1
            self.write("(from %s on not printed: dtrace exited without printing its last snapshot)"
                       % self.hms(self.next_sec))


def read_dtrace(lines, table, write):
    """Feeds tps.d's lines to TABLE; passes any other line through."""
    slots, clock_ns, read_ns, exit_ns = None, None, None, None
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        f = line.split()
        if line.startswith("tps start ") and len(f) == 4:
            table.begin(int(f[2]), int(f[3]))
        elif line.startswith("tps exit ") and len(f) == 3:
            exit_ns = int(f[2])
        elif line.startswith("tps clock ") and len(f) == 3:
            slots, clock_ns, read_ns = {}, int(f[2]), time.monotonic_ns()
        elif line.startswith("tps slot ") and len(f) == 5 and slots is not None:
            slots[int(f[2])] = (int(f[3]), int(f[4]))
        elif line == "tps snapshot-end" and slots is not None:
            table.snapshot(slots, clock_ns, read_ns, exit_ns)
            slots = None
        elif line.startswith("Tracing "):
            write(line)
            write(HEADER)
        elif line.strip():
            write(line)  # dtrace's own output: never hidden
    table.finish()


def child_setup():
    """In dtrace: its own process group; SIGINT and SIGTERM at their
    defaults (dtrace leaves an ignored one ignored, and this program passes
    them on); on Linux, SIGTERM when this program dies (so a killed reader
    leaves no dtrace behind)."""
    os.setpgrp()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtrace", default="dtrace", help="the dtrace program (default: dtrace)")
    ap.add_argument("--script", default=os.path.join(here, "tps.d"), help="tps.d (default: beside this file)")
    target = ap.add_mutually_exclusive_group(required=True)
    target.add_argument("-p", dest="pid", help="the process to trace")
    target.add_argument("-c", dest="cmd", help="a command for dtrace to run and trace")
    a = ap.parse_args(argv)
    if a.pid is not None and not re.fullmatch(r"[1-9][0-9]*", a.pid):
        print("tps_d.py: -p %s: not a process ID" % a.pid, file=sys.stderr)
        return 2
    if not os.path.isfile(a.script):
        print("tps_d.py: %s: no such file (give --script)" % a.script, file=sys.stderr)
        return 2
    argv = [a.dtrace, "-s", a.script] + (["-p", a.pid] if a.pid is not None else ["-c", a.cmd])
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, preexec_fn=child_setup)
    except OSError as e:
        print("tps_d.py: cannot run %s: %s" % (a.dtrace, e.strerror), file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _: proc.send_signal(s))

    def write(text):
        print(text, flush=True)
    table = Table(write)
    try:
        read_dtrace(proc.stdout, table, write)
    except BrokenPipeError:  # the reader of the table went away (| head): so does dtrace
        proc.terminate()
        proc.wait()
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    rc = proc.wait()
    return rc if rc != 0 else (1 if table.refused else 0)


if __name__ == "__main__":
    sys.exit(main())

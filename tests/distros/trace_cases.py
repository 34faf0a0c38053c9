#!/usr/bin/env python3
"""The scripts suite's bpftrace cases -- its workload, its cases and the
figures expected.py holds -- with each shipped script run the way a user
runs it on any service: `billing-probes trace SCRIPT -p PID -- ARGS`
(the system views take the PID as their first argument too).  Run by
the distros suite inside each Debian root, on that release's bpftrace.

    usage: trace_cases.py --tool TOOL --workload WORKLOAD [CASE]

Without CASE: every case the scripts suite runs under bpftrace, two at a
time, each in a process of its own; one line per case naming the scripts
it ran and, when it fails, the figure that differs; exit 1 if any did.
Three cases are bpftrace's own business and run it directly, as in the
scripts suite: its dry run of every twin, `bpftrace -c`, and cswitch_long,
which edits the running bpftrace's maps.  Needs root and bpftrace (77:
skipped, saying why)."""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import scriptstest as S  # noqa: E402
import test_scripts  # noqa: E402  (the cases, found as the scripts suite finds them)
from scriptstest import bt  # noqa: E402

CASE_TIMEOUT = 300  # seconds: a case takes 3 to 20
BY_BPFTRACE = {"parse": "every twin, bpftrace's dry run", "errors_cmd": "errors, bpftrace -c",
               "cswitch_long": "cswitch, its maps edited while it runs"}


class TraceTracer(S.Tracer):
    """The scripts suite's bpftrace tracer, with each script run through
    `billing-probes trace`."""

    def __init__(self, tool, workload, tmp):
        super().__init__("bpftrace", workload, tmp)
        self.tool = tool

    def argv(self, name, args, pid, pid_as_arg=False):
        # trace reads the process's modules as it starts: a workload pinned
        # to a CPU is `taskset` until it execs the workload
        try:
            bt.wait_for("process %d to be the workload" % pid,
                        lambda: os.path.realpath("/proc/%d/exe" % pid) == os.path.realpath(self.workload), 30, 0.01)
        except RuntimeError as e:
            raise S.Failure(str(e))
        args = [str(pid)] * pid_as_arg + [str(a) for a in args]
        return [self.tool, "trace", name, "-p", str(pid), "--"] + args

    def interrupt(self, proc, timeout, already_sent=False):
        """Ctrl-C: trace passes it on when bpftrace can act on it."""
        if not already_sent and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return bt.stop_process(proc, signal.SIGKILL, 10)


def bpftrace_cases():
    return sorted(c for c in test_scripts.CASES if set(test_scripts.ONLY.get(c, ("bpftrace",))) & {"bpftrace"})


def one_case(tool, workload, case):
    with tempfile.TemporaryDirectory(prefix="distros-trace-") as tmp:
        S.TRACER = S.Tracer("bpftrace", workload, tmp) if case in BY_BPFTRACE else TraceTracer(tool, workload, tmp)
        try:
            test_scripts.CASES[case]()
        except S.Failure as e:
            print("FAIL: %s" % e, file=sys.stderr)
            return 1
    print("PASS %s" % case)
    return 0


def every_case(tool, workload):
    bt.require_tracing("bpftrace")
    cases = bpftrace_cases()

    def run(case):
        t0 = time.monotonic()
        try:
            r = subprocess.run([sys.executable, __file__, "--tool", tool, "--workload", workload, case],
                               capture_output=True, text=True, errors="replace", timeout=CASE_TIMEOUT)
            rc, out, err = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = -9, e.stdout or "", "still running after %d s" % CASE_TIMEOUT
        return case, rc, out, err, time.monotonic() - t0

    with ThreadPoolExecutor(max_workers=2) as pool:
        for case, rc, out, err, secs in pool.map(run, cases):
            how = "by bpftrace itself" if case in BY_BPFTRACE else "through billing-probes trace"
            scripts = BY_BPFTRACE.get(case) or ", ".join(test_scripts.scripts_of(case)) or "copies edited for 1 CPU"
            why = " | ".join(line for line in err.split("FAIL: ", 1)[-1].splitlines() if line.strip())
            ok = bt.check(rc == 0, "scripts case %s (%s) %s: %s (%.0f s)" % (
                case, scripts, how, "the expected figures" if rc == 0 else "exit %d, %s" % (
                    rc, why[:800] or "no reason given"), secs))
            if not ok:
                print("--- %s: the tail of its output ---\n%s\n---" % (case, (out + err)[-3000:]))
    bt.finish()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("case", nargs="?")
    a = ap.parse_args()
    # the build tree's tool finds the shipped scripts here (meson.build's test set-up)
    os.environ.setdefault("BILLING_PROBES_SCRIPTS", S.BT_SCRIPTS)
    if a.case:
        return one_case(a.tool, a.workload, a.case)
    every_case(a.tool, a.workload)


if __name__ == "__main__":
    sys.exit(main())

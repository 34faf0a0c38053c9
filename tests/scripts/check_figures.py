#!/usr/bin/env python3
"""Every bpftrace case of the scripts tests on one bpftrace: the figures the
shipped scripts print against scripts-workload's books (expected.py), by
hand (`bpftrace -p PID SCRIPT`) and, given the tool, through
`billing-probes trace SCRIPT -p PID`.  For a bpftrace other than the first
on PATH (another release's, in a debootstrap root), and for the distros
suite, which runs it inside each root.

usage: check_figures.py --bpftrace PATH --workload PATH [--tool PATH]
                        [--jobs N] [CASE...]

Prints the bpftrace's version, one line per case and way (PASS, or FAIL
with its reason), then a summary; exit 0 when every case passed, 1 when
one failed, 77 when none could run (not root: each case says why).
"""
import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
TEST = os.path.join(HERE, "test_scripts.py")
# the cases that run no script through trace (parse compiles each with
# bpftrace itself; coverage and the tables read no output)
BY_HAND_ONLY = {"parse"}


def cases():
    out = subprocess.run([sys.executable, TEST, "--list"], capture_output=True, text=True, check=True).stdout
    return [line.split(":", 1)[1] for line in out.split() if line.startswith("bpftrace:")]


def run(case, how, a):
    argv = [sys.executable, TEST, "--tracer", "bpftrace", "--bpftrace", a.bpftrace, "--workload", a.workload]
    if how == "trace":
        argv += ["--via-trace", a.tool]
    proc = subprocess.run(argv + [case], capture_output=True, text=True, timeout=600)
    last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1]
    return case, how, proc.returncode, last, proc.stdout + proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bpftrace", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--tool", help="billing-probes: each case through its trace command too")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--log", help="write every case's output to this file")
    ap.add_argument("case", nargs="*")
    a = ap.parse_args()
    a.bpftrace, a.workload = os.path.abspath(a.bpftrace), os.path.abspath(a.workload)
    a.tool = a.tool and os.path.abspath(a.tool)
    version = subprocess.run([a.bpftrace, "--version"], capture_output=True, text=True).stdout.strip()
    print("bpftrace: %s (%s)" % (version, a.bpftrace), flush=True)
    todo = [(c, "bpftrace -p") for c in (a.case or cases())]
    if a.tool:
        todo += [(c, "trace") for c, _ in todo if c not in BY_HAND_ONLY]
    results = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for case, how, rc, last, text in pool.map(lambda t: run(t[0], t[1], a), todo):
            word = {0: "PASS", 77: "SKIP"}.get(rc, "FAIL")
            print("%-4s %-36s %-12s%s" % (word, case, how, "" if rc == 0 else "  " + last), flush=True)
            results.append((case, how, rc, text))
    if a.log:
        with open(a.log, "w") as f:
            for case, how, rc, text in results:
                f.write("===== %s (%s): exit %d\n%s\n" % (case, how, rc, text))
    failed = [r for r in results if r[2] not in (0, 77)]
    passed = [r for r in results if r[2] == 0]
    m = re.search(r"v?(\d+\.\d+(\.\d+)?)", version)
    print("%s: %d of %d passed, %d failed, %d skipped" % (m.group(0) if m else version, len(passed), len(results),
                                                          len(failed), len(results) - len(passed) - len(failed)))
    if failed:
        return 1
    return 0 if passed else 77


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs each SRE script of d-scripts/ against scripts-workload and asserts
the figures it prints: the bpftrace twin through USDT, the D script under
Oracle's DTrace through the pid provider (its function-site spelling, made
at test time by d-scripts/function_sites.py), both against the same
expected figures (expected.py).

usage: test_scripts.py --tracer bpftrace|dtrace --workload PATH
                       [--bpftrace PATH] [--via-trace TOOL] CASE
       test_scripts.py --list          (TRACER:CASE lines, for meson)

--bpftrace PATH runs that bpftrace (default: the first on PATH);
--via-trace TOOL runs each bpftrace script as a user would through
billing-probes: `TOOL trace SCRIPT -p PID -- ARGS` (the system views:
`-- PID ARGS`), TOOL given that bpftrace (scriptstest.Tracer).
check_figures.py runs every bpftrace case both ways, for one bpftrace
(the distros suite: each Debian root's).

Cases are found, not listed: every case_<script>[_<variant>] function of
the case modules (cases_business.py: biz_metrics, errors, amount_dist,
tps; cases_requests.py: request_latency, slow_requests; cases_system.py:
the system views and bpftrace's dry run) names the script it runs; the
"coverage" case fails when a script of d-scripts/ has no case (CPython's
test_dtrace: each script paired with its expected output).  The workload
fires every probe through libbillingprobes-ffi's billing_fire_<probe>(),
whose USDT site bpftrace sees and whose function entry DTrace's pid
provider sees.

Exit status: 0 pass, 1 fail (the reason on stderr), 77 skip (not root, no
tracer: the reason on stdout; CI has both).

How a case runs a script, and the readers of what it prints: scriptstest.py.
"""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scriptstest as S  # noqa: E402
from scriptstest import BT_SCRIPTS, D_SCRIPTS, Failure, bt, require  # noqa: E402
import cases_business  # noqa: E402
import cases_requests  # noqa: E402
import cases_system  # noqa: E402

CASE_MODULES = (cases_business, cases_requests, cases_system)


# --- which case runs which script, and under which tracer ---------------------------

CASES = {n[5:]: f for m in CASE_MODULES for n, f in vars(m).items() if n.startswith("case_")}
# cases that are one tracer's own business (cswitch_long edits the bpftrace
# script's maps: its docstring; the past_max_cpu cases cut the bpftrace
# twins' per-CPU sums)
ONLY = {"parse": ("bpftrace",), "cswitch_long": ("bpftrace",), "past_max_cpu": ("bpftrace",),
        "request_latency_past_max_cpu": ("bpftrace",),
        "request_latency_lost_increments": ("bpftrace",), "request_latency_copied_bucket": ("bpftrace",),
        # slow_requests.d counts untracked requests at their start: the D
        # twin's (another change's) business
        "slow_requests_begun": ("bpftrace",)}
# cases that run several scripts (the rest run the script their name starts with)
COVERS = {"system": tuple(cases_system.SYSTEM_VIEWS), "past_max_cpu": ()}


def scripts_of(case):
    if case in COVERS:
        return COVERS[case]
    names = [n for n in script_names() if case == n or case.startswith(n + "_")]
    return tuple(sorted(names, key=len)[-1:])


def script_names():
    return sorted(f[:-2] for f in os.listdir(D_SCRIPTS) if f.endswith(".d"))


def case_coverage():
    """Every D script and its twin are run by some case (no list kept by hand:
    a new script without a case fails here)."""
    covered = {s for c in CASES for s in scripts_of(c)}
    missing = [n for n in script_names() if n not in covered]
    require(not missing, "scripts no case runs: %s (add case_<script> and its figures "
            "in expected.py)" % missing)
    for n in script_names():
        require(os.path.exists(os.path.join(BT_SCRIPTS, n + ".bt")), "%s.d has no bpftrace twin" % n)
    print("every script is run: %s" % ", ".join(script_names()))


CASES["coverage"] = case_coverage
ONLY["coverage"] = ("any",)
ONLY["biz_metrics_tables"] = ("any",)


def listing():
    """S.TRACER:CASE lines for meson (tests/scripts/meson.build)."""
    for case in sorted(CASES):
        for tracer in ONLY.get(case, ("bpftrace", "dtrace")):
            print("%s:%s" % (tracer, case))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true", help="print S.TRACER:CASE lines and exit")
    ap.add_argument("--tracer", choices=("bpftrace", "dtrace", "any"), default="bpftrace")
    ap.add_argument("--workload")
    ap.add_argument("--bpftrace", help="the bpftrace to run (default: the first on PATH)")
    ap.add_argument("--via-trace", metavar="TOOL", help="run the bpftrace scripts through TOOL trace")
    ap.add_argument("case", nargs="?", choices=sorted(CASES))
    a = ap.parse_args()
    if a.list:
        listing()
        return 0
    if not a.case or not a.workload:
        ap.error("CASE and --workload are needed")
    try:
        with tempfile.TemporaryDirectory(prefix="billing-scripts-") as tmp:
            if a.tracer != "any":
                # DTrace names a pid-provider uprobe after the file's inode
                # (dt_pid/p_DEV_INO_OFF) and the dtrace that exits deletes
                # it: on a copy of its own, a case shares none with another
                # case running beside it
                workload = bt.private_copy(a.workload, tmp) if a.tracer == "dtrace" else a.workload
                bpftrace = a.tracer == "bpftrace"
                S.TRACER = S.Tracer(a.tracer, workload, tmp, bpftrace and a.bpftrace, bpftrace and a.via_trace)
            CASES[a.case]()
    except Failure as e:
        print("FAIL: %s" % e, file=sys.stderr)
        return 1
    print("PASS %s (%s)" % (a.case, a.tracer))
    return 0


if __name__ == "__main__":
    sys.exit(main())

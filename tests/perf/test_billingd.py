#!/usr/bin/env python3
"""billingd's instructions and clock reads per request, stats on (default
settings, the slow threshold scaled to callgrind's pace: SLOW) against
every probe compiled out, held against tests/perf/budgets.json (test
"billingd").

  test_billingd.py BUDGETS BILLINGD_STATS BILLINGD_COMPILED_OUT

Each billingd runs under callgrind (one worker thread, gateway latency 0)
and serves a fixed schedule of customer flows on one connection, one
request at a time (bench/billingd_bench.py's run_schedule: the same
requests in the same order every run), FLOWS and then 2 x FLOWS of them:
the difference over the requests between the two runs is one request,
start-up, shut-down and each label set's first use cancelled (the short run
holds every label set of the schedule); counted in the thread that serves
(billingd_bench.callgrind_run, which counts the requests served: the
schedule's and one /healthz, and fixes jansson's hashing seed: with its
random one a run's count strays by up to some 80 instructions a request).  What stats add is counted inside billingd's
handlers (on_request, on_completed: libmicrohttpd's event loop
around them runs more or less often as time goes, the same in both
builds) and taken as a share of the whole request compiled out.  A clock
read is a call into the C library's clock_gettime, gettimeofday or time
from outside them and outside libmicrohttpd; the rdtsc instructions
executed are counted apart (the trails time events by the time-stamp
counter where it is constant, by clock_gettime elsewhere): all from the
same callgrind output.
"""
import os
import sys

import perftest

sys.path.insert(0, os.path.join(perftest.SOURCE_ROOT, "bench"))
import billingd_bench  # noqa: E402

FLOWS = billingd_bench.SCHEDULE_FLOWS  # customer flows (134 requests) and twice as many: the bench's


# Under callgrind a request takes some 50 times as long: at the default
# 250 ms some would be slow here only, and count their trail's commit.
# 10 s (the last bound a threshold may be) keeps "slow" where it is natively.
SLOW = "10s"


def per_request(exe, workdir):
    env = perftest.clean_env(BILLING_STATS_DIR=os.path.join(workdir, "segments"), BILLING_STATS_SLOW=SLOW)
    runs = [billingd_bench.callgrind_run(exe, flows, workdir, env) for flows in (FLOWS, 2 * FLOWS)]
    n = runs[1]["requests"] - runs[0]["requests"]
    return {k: (runs[1][k] - runs[0][k]) / n for k in runs[0] if k != "requests"}


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    budgets_path, stats_exe, out_exe = sys.argv[1:]
    perftest.require_valgrind()
    budgets = perftest.Budgets(budgets_path, "billingd")
    with perftest.Workdir("perf-billingd-") as workdir:
        stats, out = per_request(stats_exe, workdir), per_request(out_exe, workdir)
    # What stats add is in billingd's own work (the probes fire there); the
    # request's whole cost, libmicrohttpd's included, is what it is a share of.
    pct = 100.0 * (stats["handled"] - out["handled"]) / out["instructions"]
    budgets.hold("billingd with stats, instructions per request over compiled out", pct,
                 f"{stats['handled'] - out['handled']:,.0f} more in billingd's handlers ({stats['handled']:,.0f} with "
                 f"stats, {out['handled']:,.0f} compiled out) of {out['instructions']:,.0f} a request compiled "
                 f"out; whole threads: {stats['instructions']:,.0f} with stats")
    budgets.hold("billingd with stats, clock reads per request over compiled out",
                 stats["own_clock_calls"] - out["own_clock_calls"],
                 f"{stats['own_clock_calls']:.2f} with stats, {out['own_clock_calls']:.2f} compiled out, outside "
                 f"libmicrohttpd; with its own: {stats['clock_calls']:.2f} and {out['clock_calls']:.2f}")
    budgets.hold("billingd with stats, rdtsc per request over compiled out", stats["rdtsc"] - out["rdtsc"],
                 f"{stats['rdtsc']:.2f} with stats, {out['rdtsc']:.2f} compiled out")
    budgets.finish()


if __name__ == "__main__":
    sys.exit(main())

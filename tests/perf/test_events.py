#!/usr/bin/env python3
"""Instructions per event of the stats-fed probes, default build and
settings, held against tests/perf/budgets.json (test "events").

  test_events.py BUDGETS EVENT_LOOP EVENT_LOOP_COMPILED_OUT

EVENT_LOOP (tests/perf/event_loop.c in a stats build: native buckets and
slow-request trails on, as a service gets them with no setting) fires one
probe N and 2N times under callgrind, counting fire_events() only; the
difference over N is one event, start-up and first-use costs (the
segment, label interning) cancelled.  The same over EVENT_LOOP_COMPILED_OUT
(the probes compiled out: the loop alone) is subtracted.  Figures:
payment-auth and error per event, and a fast request (request-start, then
request-done 1 ms later) per request.
"""
import os
import sys

import perftest

N = 2048  # events; the arguments repeat every 1,024, so N and 2N see the same mix
FIGURES = (("payment-auth", "payment-auth, instructions per event"),
           ("error", "error, instructions per event"),
           ("fast-request", "fast request (request-start + request-done), instructions per request"))


def per_event(exe, event, workdir):
    env = perftest.clean_env(BILLING_STATS_DIR=os.path.join(workdir, "segments"))
    one, two = (perftest.collected([exe, event, str(n)], workdir, "fire_events", env) for n in (N, 2 * N))
    return (two - one) / N


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    budgets_path, loop, loop_out = sys.argv[1:]
    perftest.require_valgrind()
    budgets = perftest.Budgets(budgets_path, "events")
    with perftest.Workdir("perf-events-") as workdir:
        for event, figure in FIGURES:
            stats, alone = per_event(loop, event, workdir), per_event(loop_out, event, workdir)
            budgets.hold(figure, stats - alone,
                         f"{perftest.number(stats)} a loop iteration in the stats build, "
                         f"{perftest.number(alone)} with the probes compiled out; callgrind, {N} and {2 * N} events")
    budgets.finish()


if __name__ == "__main__":
    sys.exit(main())

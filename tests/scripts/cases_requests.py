"""The scripts tests' cases for the per-request views: request_latency and
slow_requests (test_scripts.py runs them; expected.py holds their figures).
"""
import math
import os
import re

import scriptstest as S
from scriptstest import BT_SCRIPTS, hist, intervals_add_up, one, require, run, total_table
import expected as X


def bucket_edge(us):
    """Upper edge of the log-linear bucket (8 per power of two) holding us."""
    if us < 8:
        return us + 1
    o = us.bit_length() - 1
    sub = (us >> (o - 3)) & 7
    return (9 + sub) << (o - 3)


def percentile_edges(plan):
    values = sorted(v for v, n in plan for _ in range(n))
    return [bucket_edge(values[math.ceil(len(values) * q / 100) - 1]) for q in (50, 95, 99)]


def latency_plans():
    """The requests mode's plan per request_latency row: its two handlers,
    then the extra ones.  bpftrace gives 7 handlers a row each and the rest
    one "(other)" row; D prints every handler."""
    plans = dict(X.REQUESTS)
    room = len(X.EXTRA_HANDLERS) if S.TRACER.dtrace else X.LATENCY_ROWS - len(plans)
    for handler in X.EXTRA_HANDLERS[:room]:
        plans[handler] = [(X.EXTRA_US, 1)]
    if room < len(X.EXTRA_HANDLERS):
        plans["(other)"] = [(X.EXTRA_US, len(X.EXTRA_HANDLERS) - room)]
    return plans


def expected_latency_rows(requests=None, threshold_ms=X.SLO_THRESHOLD_MS):
    """{handler: [count, slow, "slow%", p50, p95, p99]}; D's rows are
    [count, slow] (it prints no estimates: request_latency.d's header)."""
    rows = {}
    for handler, plan in (requests or latency_plans()).items():
        n = sum(c for _, c in plan)
        slow = sum(c for v, c in plan if v > threshold_ms * 1000)
        rows[handler] = [n, slow]
        if not S.TRACER.dtrace:
            rows[handler] += ["%d.%02d" % divmod(slow * 10000 // n, 100)] + percentile_edges(plan)
    return rows


def latency_total(out, threshold_ms=X.SLO_THRESHOLD_MS):
    """request_latency's TOTAL table as expected_latency_rows() lays it
    out; a handler printed in two rows fails."""
    table = total_table(out, r"TOTAL since start, slow: > %d ms" % threshold_ms,
                        3 if S.TRACER.dtrace else 7)
    got = {f[0]: [int(f[1]), int(f[2])] + ([f[3]] + [x if x == "-" else int(x) for x in f[4:]] if f[3:] else [])
           for f in table}
    require(len(got) == len(table), "a handler has two rows: %s" % [f[0] for f in table])
    return got


def no_stray_histograms(out, handlers):
    """Every @usecs histogram at exit belongs to a handler that ran
    (bpftrace: one line per bucket, @usecs[HANDLER, FROM]; D: one
    histogram per handler)."""
    printed = {k if S.TRACER.dtrace else k.rsplit(", ", 1)[0] for k in re.findall(r"^@usecs\[(.*)\]:", out, re.M)}
    require(sorted(printed) == sorted(handlers), "histograms for %s, want %s" % (printed, sorted(handlers)))


def intervals_add_up_to(out, want):
    """The 1 s intervals' COUNT and SLOW add up to the TOTAL rows WANT."""
    sums = {}
    for m in re.finditer(r"last 1 s, slow: > 100 ms\n(.*?)(?=\n\n|\Z)", out, re.S):
        for line in m.group(1).split("\n")[1:]:
            f = line.split()
            c = sums.setdefault(f[0], [0, 0])
            c[0] += int(f[1])
            c[1] += int(f[2])
    intervals_add_up(sums, {h: r[:2] for h, r in want.items()}, "request_latency")


def case_request_latency():
    out = one("requests", "request_latency", 100, 1)
    got = latency_total(out)
    want = expected_latency_rows()
    require(got == want, "TOTAL rows %s, want %s" % (got, want))
    require(re.search(r"^UNMEASURED \(duration 0, skipped\): %d$" % X.UNMEASURED, out, re.M),
            "UNMEASURED line missing or wrong")
    for handler, rows in X.LATENCY_HIST.items():
        h = hist(out, "@usecs[%s]" % handler)
        require(h == rows, "%s histogram %s, want %s" % (handler, h, rows))
    no_stray_histograms(out, list(X.REQUESTS) + X.EXTRA_HANDLERS)
    intervals_add_up_to(out, want)


def case_request_latency_long():
    """Durations no test can wait for, as the probe carries them (25 min to
    2^64 - 1000 ns): every percentile the upper edge of its own bucket (none
    held at 2^31 us), every histogram row right: the bpftrace twin buckets
    each duration itself (bpftrace 0.17's hist() filed everything from 2^31
    up in [2G, 4G)); D's quantize() reads the duration unsigned (a signed
    read drops the largest as negative)."""
    out = one("long", "request_latency", 100, 1)
    got = latency_total(out)
    want = expected_latency_rows(X.LONG_REQUESTS)
    require(got == want, "TOTAL rows %s, want %s" % (got, want))
    for handler, rows in X.LONG_HIST.items():
        h = hist(out, "@usecs[%s]" % handler)
        require(h == rows, "%s histogram %s, want %s" % (handler, h, rows))
    no_stray_histograms(out, list(X.LONG_HIST))
    intervals_add_up_to(out, want)


def case_request_latency_race():
    """4 threads finish requests of one handler at full speed: every figure
    is exact under both tracers (D prints COUNT and SLOW only), so COUNT
    > 0 can never come with a 0 SLOW%, and the histogram is exact; the
    percentiles are the plan's bucket edges, or "-" when their buckets
    (plain counters shared by all CPUs) were damaged under contention
    (request_latency_lost_increments, _copied_bucket), never another figure."""
    out = one("race", "request_latency", 100, 1)
    got = latency_total(out)
    want = expected_latency_rows(X.RACE_REQUESTS)
    refused = {h: r[:3] + ["-"] * 3 for h, r in want.items()}
    print("request_latency under contention: %s (of %d requests)" % (got, X.RACE_TOTAL))
    require(got == want or (not S.TRACER.dtrace and got == refused),
            "TOTAL rows under contention %s, want %s (or its percentiles refused)" % (got, want))
    h = hist(out, "@usecs[race]")
    want_h = {"[1K, 2K)": X.RACE_TOTAL * 3 // 4, "[128K, 256K)": X.RACE_TOTAL // 4}
    require(h == want_h, "histogram under contention %s, want %s" % (h, want_h))
    no_stray_histograms(out, ["race"])


def case_request_latency_threshold():
    """A threshold argument of 30 ms: payment.authorize's 40 ms requests are slow too."""
    out = one("requests", "request_latency", 30, 1)
    got = {h: tuple(r[:3]) for h, r in latency_total(out, 30).items()}
    want = {h: tuple(r[:3]) for h, r in expected_latency_rows(threshold_ms=30).items()}
    require(want["invoice.create"][:2] == (100, 5) and want["payment.authorize"][:2] == (50, 50),
            "expected.py's plan changed: %s" % want)
    require(got == want, "TOTAL rows with 30 ms %s, want %s" % (got, want))


def slow_trails(out):
    """{request id: (handler, [(offset_us, probe, detail)])} of every
    SLOW REQUEST block; a request printed twice fails."""
    trails = {}
    for block in re.finditer(r"^SLOW REQUEST (\d+) (\S+)\n((?:  \+.*\n?)*)", out, re.M):
        rid = int(block.group(1))
        require(rid not in trails, "request %d printed twice" % rid)
        events = [re.match(r"  \+\s*(\d+) us  (\S+)\s+(.*)$", l).groups()
                  for l in block.group(3).rstrip("\n").split("\n")]
        trails[rid] = (block.group(2), [(int(o), p, d) for o, p, d in events])
    return trails


def require_trail(rid, events, want):
    """EVENTS (offset, probe, detail) are the lines WANT (probe, detail), in
    order, offsets from 0 never going back."""
    got = [(p, d) for _, p, d in events]
    require(got == want, "%d: trail\n  %s\nwant\n  %s" % (rid, "\n  ".join(map(str, got)),
                                                          "\n  ".join(map(str, want))))
    offsets = [o for o, _, _ in events]
    require(offsets[0] == 0 and offsets == sorted(offsets), "%d: offsets %s" % (rid, offsets))


def case_slow_requests():
    """Every slow request's whole trail, each line as the workload fired it:
    IDs above 2^32 (transactions and invoices above 2^63) and amounts
    beyond 32 bits, one negative, printed in full."""
    out = one("requests", "slow_requests", X.SLO_THRESHOLD_MS)
    trails = slow_trails(out)
    want_ids = set(X.SLOW_INVOICE_IDS + X.SLOW_PAYMENT_IDS)
    require(set(trails) == want_ids, "slow requests %s, want %s" % (sorted(trails), sorted(want_ids)))
    for rid, (handler, events) in sorted(trails.items()):
        require(handler == X.slow_trail(rid)[0][1].split("=")[1], "%d: handler %s" % (rid, handler))
        require_trail(rid, events, X.slow_trail(rid))
    # the D script has no per-request event cap, so no "events not kept"
    require(re.search(r"untracked requests \(128 in flight\): 0%s$" %
                      ("" if S.TRACER.dtrace else r", events not kept \(31 per request\): 0"), out, re.M),
            "untracked/dropped line missing or not zero")


def case_slow_requests_begun():
    """A request begun before the script attached (-p on a busy service)
    and ending slow is counted untracked, never lost silently; the request
    after it is followed whole."""
    out = one("begun", "slow_requests", X.SLO_THRESHOLD_MS)
    trails = slow_trails(out)
    require(set(trails) == set(X.BEGUN_IDS), "slow requests %s, want %s" % (sorted(trails), X.BEGUN_IDS))
    for rid, (handler, events) in trails.items():
        require_trail(rid, events, X.BEGUN_TRAIL)
    require(re.search(r"^untracked requests \(128 in flight\): %d, " % X.BEGUN_UNTRACKED, out, re.M),
            "the request begun before tracing not counted untracked")


def case_slow_requests_overlap():
    """One slow request while 40 fast ones start and finish on its thread
    and CPU: the slow one's start time and trail stay its own (storage the
    fast ones free and reuse must not be the slow one's); its db query,
    fired on another thread with its request_id, is in its trail."""
    out = one("overlap", "slow_requests", X.SLO_THRESHOLD_MS)
    trails = slow_trails(out)
    require(set(trails) == {X.OVERLAP_ID}, "slow requests %s, want only %d" % (sorted(trails), X.OVERLAP_ID))
    handler, events = trails[X.OVERLAP_ID]
    require_trail(X.OVERLAP_ID, events, X.OVERLAP_TRAIL)
    require(X.OVERLAP_MIN_US <= events[-1][0] <= X.OVERLAP_MAX_US,
            "request-done at +%d us: the request took at least %d us, and not %d s"
            % (events[-1][0], X.OVERLAP_MIN_US, X.OVERLAP_MAX_US // 1000000))
    # (a fast one may be untracked: slow_requests.d's slot of the slow one)
    require(re.search(r"untracked requests \(128 in flight\): \d+", out, re.M), "no untracked line")


def case_slow_requests_burst():
    """A burst of slow requests within the documented capacity, the
    process exiting right after it: no trail lost."""
    out = run("burst", [("slow_requests", "slow_requests", [X.SLO_THRESHOLD_MS], False)],
              extra=["--linger-ms", str(X.BURST_LINGER_MS)])["slow_requests"]
    ids = [int(i) for i in re.findall(r"^SLOW REQUEST (\d+) report.burst$", out, re.M)]
    require(sorted(ids) == X.BURST_IDS, "printed %d of %d burst trails, missing %s" % (
        len(set(ids)), len(X.BURST_IDS), sorted(set(X.BURST_IDS) - set(ids))[:10]))
    require(not re.search(r"still queued", out), "trails left queued at exit")


def case_slow_requests_bounds():
    """More events than a trail keeps, more requests than it follows."""
    out = one("bounds", "slow_requests", X.SLO_THRESHOLD_MS)
    m = re.search(r"^SLOW REQUEST %d report.export\n((?:  .*\n?)*)" % X.LONG_TRAIL_ID, out, re.M)
    require(m, "no trail for the long request")
    lines = m.group(1).rstrip("\n").split("\n")
    events = [l for l in lines if re.match(r"  \+", l)]
    require("request-done" in lines[-1] and "duration_us=500000" in lines[-1], "last line %r" % lines[-1])
    batch = {int(i) for i in re.findall(r"^SLOW REQUEST (\d+) invoice.create$", out, re.M)}
    if S.TRACER.dtrace:
        # D keeps a whole trail (no event cap; the speculation buffer bounds
        # it).  Oracle's DTrace for Linux keeps far fewer speculations in
        # flight than nspec=128 ("failed speculations"): the requests it
        # followed must be whole and from the batch, the rest untracked.
        require(len(events) == X.LONG_TRAIL_EVENTS, "long trail kept %d lines" % len(events))
        require(batch and batch <= set(X.BATCH_IDS), "batch trails: %s" % sorted(batch))
        m = re.search(r"^untracked requests \(128 in flight\): (\d+)$", out, re.M)
        require(m, "no untracked line")
        return
    require(len(events) == X.LONG_TRAIL_KEPT + 1, "long trail kept %d lines" % len(events))
    require(lines[-2] == "  ... %d more events not kept (31 per request)" % X.LONG_TRAIL_DROPPED,
            "no 'more events' line before request-done: %r" % lines[-2])
    require(batch == set(X.BATCH_IDS[:X.MAX_IN_FLIGHT]), "batch trails: %d of them" % len(batch))
    require(re.search(r"untracked requests \(128 in flight\): %d, events not kept \(31 per request\): %d"
                      % (len(X.BATCH_IDS) - X.MAX_IN_FLIGHT, X.LONG_TRAIL_DROPPED), out),
            "untracked/dropped line wrong")


def case_slow_requests_simultaneous():
    """Slow requests finishing at the same instant on two CPUs (two threads
    released together, 8 request-dones each, 6 times): every trail printed
    once and whole -- none lost, none printed as request 0 or with a "?"
    line (a queue two CPUs append to at once loses one of the two)."""
    out = one("simultaneous", "slow_requests", X.SLO_THRESHOLD_MS)
    trails = slow_trails(out)
    want = set(X.SIMULTANEOUS_IDS)
    require(set(trails) == want, "printed %d of %d trails; missing %s, unexpected %s" % (
        len(set(trails) & want), len(want), sorted(want - set(trails))[:8], sorted(set(trails) - want)[:8]))
    for rid, (handler, events) in sorted(trails.items()):
        require(handler == "report.simultaneous", "%d: handler %s" % (rid, handler))
        require_trail(rid, events, X.SIMULTANEOUS_TRAIL)
    require(not re.search(r"still queued|lost", out), "trails left queued or lost at exit")
    require(re.search(r"^untracked requests \(128 in flight\): 0%s$" %
                      ("" if S.TRACER.dtrace else r", events not kept \(31 per request\): 0"), out, re.M),
            "untracked/dropped line missing or not zero")


def case_request_latency_past_max_cpu():
    """request_latency.bt sums its counters over CPU ids 0..255: a request
    done on a CPU past that ends the trace with one refusal line and no
    figures.  A copy with the limit cut to 1, the workload pinned to CPU 1,
    then to CPU 0 (the copy's TOTAL as exact as the script's)."""
    require({0, 1} <= os.sched_getaffinity(0), "this case needs CPUs 0 and 1")
    text = open(os.path.join(BT_SCRIPTS, "request_latency.bt")).read()
    cut = text.replace("cpu >= 256", "cpu >= 1").replace("cpu & 255", "cpu & 0").replace("$c < 256", "$c < 1")
    require(cut.count("cpu >= 1") == 1 and cut.count("$c < 1") >= 3, "request_latency.bt: no MAX_CPU limit to cut")
    path = os.path.join(S.TRACER.tmp, "request_latency_max_cpu_1.bt")
    with open(path, "w") as f:
        f.write(cut)
    on1 = run("requests", [("rl", path, [100, 1], False)], cpu=1)["rl"]
    lines = [l for l in on1.splitlines() if l.strip()]
    require(lines and lines[-1].startswith("refused: an event on CPU 1; this script sums CPU ids 0..255 only")
            and on1.count("refused") == 1 and "TOTAL" not in on1 and not re.search(r"^@", on1, re.M),
            "on CPU 1: one refusal line last, no totals, no maps:\n%s" % on1)
    on0 = run("requests", [("rl", path, [100, 1], False)], cpu=0)["rl"]
    got = latency_total(on0)
    require("refused" not in on0 and got == expected_latency_rows(), "on CPU 0: TOTAL rows %s" % got)
    print("request_latency: refused past MAX_CPU, exact below it")


def lossy_copy(name, old, new):
    """A copy of request_latency.bt with OLD (found once) replaced by NEW."""
    text = open(os.path.join(BT_SCRIPTS, "request_latency.bt")).read()
    require(text.count(old) == 1, "request_latency.bt: %r not found" % old)
    path = os.path.join(S.TRACER.tmp, name)
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    return path


def refused_percentiles(path):
    """The race workload traced by PATH: its TOTAL row exact but for the
    percentiles, "-"."""
    out = run("race", [("rl", path, [100, 1], False)])["rl"]
    got = latency_total(out)
    want = {h: r[:3] + ["-"] * 3 for h, r in expected_latency_rows(X.RACE_REQUESTS).items()}
    require(got == want, "TOTAL rows with damaged percentile buckets %s, want %s" % (got, want))
    return got


def case_request_latency_lost_increments():
    """request_latency.bt's percentile buckets are plain counters shared by
    all CPUs, so they can lose increments.  A copy that drops about 5 % of
    the bucket increments (nsecs % 20) prints "-" for the percentiles, its
    buckets no longer adding up to COUNT: a percentile from them could lie
    in any bucket."""
    inc = "@bins[$h, $b] = @bins[$h, $b] + 1; @tbins[$h, $b] = @tbins[$h, $b] + 1;"
    got = refused_percentiles(lossy_copy("request_latency_lossy.bt", inc, "if (nsecs %% 20 != 0) { %s }" % inc))
    print("request_latency: percentiles refused with 5 %% of the bucket increments lost: %s" % got)


def case_request_latency_copied_bucket():
    """Two CPUs updating the shared percentile buckets at once can copy one
    bucket's count into another: the hash map hands the element one CPU
    still reads to the other's next update (bpftrace 0.27 on sid printed
    P50 163840 for 2048 under contention).  A copy that sets the 2 ms
    requests' group to the count of an empty group (under 8 us) plus one,
    about every 1000th request, prints "-" for the percentiles, not P50
    163840."""
    inc = "@groups[$h, $b / 8] = @groups[$h, $b / 8] + 1; @tgroups[$h, $b / 8] = @tgroups[$h, $b / 8] + 1;"
    copy = ("if ($b / 8 == 8 && nsecs %% 1000 == 0) { @tgroups[$h, 8] = @tgroups[$h, 0] + 1; } else { %s }"
            % inc)
    got = refused_percentiles(lossy_copy("request_latency_copied.bt", inc, copy))
    print("request_latency: percentiles refused with a bucket's count copied from another: %s" % got)

"""The scripts tests' cases for the business figures: biz_metrics, errors,
amount_dist and tps (test_scripts.py runs them; expected.py holds their
figures).
"""
import os
import re
import subprocess
import sys

import scriptstest as S
from scriptstest import (BT_SCRIPTS, TIMEOUT, hist, intervals_add_up, keyed, one, require, side_by_side,
                         run, section)
import expected as X


def biz_breakdowns(lines, total=False):
    """biz_metrics' breakdowns below the summary: {"payments": {...},
    "amounts": {...}[, "refunds": {...}]}, each table's rows sorted by
    value as the tracer sorts them (bpftrace ascending, D descending)."""
    sfx = "_total" if total else ""
    tables = {"payments": keyed(lines, "@payments" + sfx, str, int),
              "amounts": keyed(lines, "@amount_minor" + sfx, str, str)}
    if total:
        tables["refunds"] = keyed(lines, "@refunds_total", str)
    for what, rows in tables.items():
        values = list(rows.values())
        require(values == sorted(values, reverse=S.TRACER.dtrace),
                "%s rows not sorted by value (%s): %s" % (what, "descending" if S.TRACER.dtrace else "ascending", rows))
    return tables


def busy_if_dtrace():
    """Workload options that let D's tick-1sec fire (it may not on an idle
    CPU here), so that the D interval tables are printed and checked."""
    return ["--keep-cpus-busy"] if S.TRACER.dtrace else []


def case_biz_metrics():
    out = run("business", [("biz_metrics", "biz_metrics", [1], False)], extra=busy_if_dtrace())["biz_metrics"]
    body = section(out, r"TOTAL since start")
    total = biz_breakdowns(body, total=True)
    require(total == {"payments": X.BIZ_PAYMENTS, "amounts": X.BIZ_AMOUNTS, "refunds": X.BIZ_REFUNDS},
            "TOTAL breakdowns differ:\n%s\nexpected\n%s" % (total, (X.BIZ_PAYMENTS, X.BIZ_AMOUNTS, X.BIZ_REFUNDS)))
    require(len(body) == 3 + 3 + sum(len(t) for t in total.values()),
            "TOTAL: summary, three headings and the rows, nothing else:\n%s" % "\n".join(body))
    # Every event shows in exactly one interval: the intervals sum to the total.
    sums = {"payments": {}, "amounts": {}}
    summed = dict.fromkeys(X.BIZ_SUMMARY, 0)
    for m in re.finditer(r"^\d\d:\d\d:\d\d  last 1 s\n(.*?)(?=\n\n|\Z)", out, re.S | re.M):
        lines = m.group(1).split("\n")
        s = biz_summary("\n".join(lines[:3]), per_second=True)
        for k in ("invoices", "approved", "declined", "refunds"):
            summed[k] += s[k]
        tables = biz_breakdowns(lines)
        heads = [l for l in lines[3:] if not l.startswith("@")]
        require(len(heads) == 2 and all(l.endswith(", top %d:" % X.BIZ_TOP) or l.endswith(": none seen")
                                        for l in heads), "interval headings %s" % heads)
        require(len(lines) + 1 <= 25, "an interval is %d lines (blank line included), over 25" % (len(lines) + 1))
        for what, rows in tables.items():
            require(len(rows) <= X.BIZ_TOP, "%s: %d rows, over the top %d" % (what, len(rows), X.BIZ_TOP))
            for k, v in rows.items():
                sums[what][k] = sums[what].get(k, 0) + v
    intervals_add_up(sums["payments"], X.BIZ_PAYMENTS, "biz_metrics payments")
    intervals_add_up(sums["amounts"], X.BIZ_AMOUNTS, "biz_metrics amounts")
    total = biz_summary("\n".join(body[:3]))
    require(total == X.BIZ_SUMMARY, "TOTAL summary %s, want %s" % (total, X.BIZ_SUMMARY))
    summed["approval_pct"] = total["approval_pct"]
    intervals_add_up(summed, X.BIZ_SUMMARY, "biz_metrics summary")


def case_biz_metrics_tables():
    """expected.py's breakdowns are its business events (BIZ_ROWS) laid out:
    two hand-written views of the workload that must agree."""
    pay, amounts, refunds = {}, {}, {}
    for (metric, cur, label, code), (n, amount) in X.BIZ_ROWS.items():
        if metric in ("approved", "declined"):
            pay[label, code] = pay.get((label, code), 0) + n
        if metric == "refunds":
            refunds[label] = refunds.get(label, 0) + n
        amounts[cur, metric] = amounts.get((cur, metric), 0) + amount
    require((pay, amounts, refunds) == (X.BIZ_PAYMENTS, X.BIZ_AMOUNTS, X.BIZ_REFUNDS),
            "expected.py: BIZ_PAYMENTS/AMOUNTS/REFUNDS disagree with BIZ_ROWS: %s" % ((pay, amounts, refunds),))


def biz_summary(text, per_second=False):
    """biz_metrics' three summary lines -> {"invoices": N, ...}; with
    per_second (1 s intervals) each rate must equal its count."""
    rate = r" \((\d+)/s\)" if per_second else ""
    m = re.match(r"invoices (\d+)%s\npayments approved (\d+) declined (\d+) \(%sapproval (\d+)%%\)\n"
                 r"refunds (\d+)%s$" % (rate, r"(\d+)/s, " if per_second else "", rate), text)
    require(m, "summary lines %r" % text)
    g = [int(x) for x in m.groups()]
    if per_second:
        require(g[0] == g[1] and g[2] + g[3] == g[4] and g[6] == g[7], "rates of a 1 s interval %r" % text)
        g = [g[0], g[2], g[3], g[5], g[6]]
    pay = g[1] + g[2]
    require(g[3] == (g[1] * 100 // pay if pay else 0), "approval %% in %r" % text)
    return dict(zip(("invoices", "approved", "declined", "approval_pct", "refunds"), g))


def error_rows(lines, name):
    """errors' rows @NAME[component, code]: N, sorted as the tracer sorts
    (bpftrace ascending, D descending)."""
    rows = keyed(lines, name, str, int)
    values = list(rows.values())
    require(values == sorted(values, reverse=S.TRACER.dtrace), "%s rows not sorted by count: %s" % (name, rows))
    return rows


def case_errors():
    out = run("business", [("errors", "errors", [1], False)], extra=busy_if_dtrace())["errors"]
    body = section(out, r"TOTAL since start")
    total = error_rows(body, "@errors_total")
    require(total == X.ERROR_ROWS, "TOTAL rows differ: %s" % total)
    require(body[:2] == ["errors %d" % sum(X.ERROR_ROWS.values()), "errors by [component, code]:"]
            and len(body) == 2 + len(total), "TOTAL summary and heading %r" % body[:2])
    # each interval: the summary is its rows' sum (at most 10 rows here:
    # all of them), at 1 s per interval the rate equals the count
    sums = {}
    for m in re.finditer(r"^\d\d:\d\d:\d\d  last 1 s\n(.*?)(?=\n\n|\Z)", out, re.S | re.M):
        lines = m.group(1).split("\n")
        s = re.match(r"errors (\d+) \((\d+)/s\)$", lines[0])
        rows = error_rows(lines, "@errors")
        require(s and int(s.group(1)) == int(s.group(2)) == sum(rows.values()) and len(rows) <= 10,
                "interval %r" % lines)
        require(lines[1] == ("errors by [component, code], top 10:" if rows else
                             "errors by [component, code]: none seen"), "interval heading %r" % lines[1])
        for k, v in rows.items():
            sums[k] = sums.get(k, 0) + v
    intervals_add_up(sums, X.ERROR_ROWS, "errors")


def case_errors_cmd():
    """The -c form: the tracer starts the workload itself.  bpftrace 0.17
    needs the binary's path in the probe (the launcher's job; done by hand
    here)."""
    cmd = "%s business --delay-ms 300 --linger-ms 1600" % S.TRACER.workload
    if S.TRACER.dtrace:
        argv = S.TRACER.dtrace_s("errors") + ["-c", cmd, "1"]
    elif S.TRACER.via_trace:
        argv = [S.TRACER.via_trace, "trace", "errors", "-c", cmd, "--", "1"]
    else:
        src = open(os.path.join(BT_SCRIPTS, "errors.bt")).read()
        require("usdt::billing:" in src, "errors.bt has no usdt::billing: probe")
        script = os.path.join(S.TRACER.tmp, "errors.bt")
        with open(script, "w") as f:
            f.write(src.replace("usdt::billing:", "usdt:%s:billing:" % S.TRACER.workload))
        argv = [S.TRACER.exe, "-c", cmd, script, "1"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    finally:
        S.TRACER.cleanup(proc)
    out = stdout.decode(errors="replace")
    sys.stdout.write(out)
    require(proc.returncode == 0, "%s -c failed: %s" % (S.TRACER.kind, stderr.decode(errors="replace")))
    total = error_rows(section(out, r"TOTAL since start"), "@errors_total")
    require(total == X.ERROR_ROWS, "TOTAL rows differ with -c: %s" % total)


def case_amount_dist():
    out = one("business", "amount_dist")
    # one line of figures per [currency, kind]: bpftrace's stats() layout,
    # "count N, average A, total S" (0.17, 0.23, D's twin), or
    # "{ .count = N, .average = A, .total = S }" (0.27)
    stats = {}
    for m in re.finditer(r"^@stats_minor\[(.*), (.*)\]: (?:count (\d+), average (-?\d+), total (-?\d+)|"
                         r"\{ \.count = (\d+), \.average = (-?\d+), \.total = (-?\d+) \})$", out, re.M):
        require(m.group(1, 2) not in stats, "%s printed twice" % (m.group(1, 2),))
        n, avg, total = [int(x) for x in m.groups()[2:] if x is not None]
        stats[m.group(1, 2)] = (n, total, avg)
    for key, (count, total, avg, rows) in X.AMOUNTS.items():
        require(stats.get(key) == (count, total, avg), "%s count, total, average %s, want %s"
                % (key, stats.get(key), (count, total, avg)))
        got = hist(out, "@amount_minor[%s, %s]" % key)
        require(got == rows, "%s histogram %s, want %s" % (key, got, rows))
    require(len(stats) == len(X.AMOUNTS), "unexpected keys: %s" % stats)
    # every bucket printed belongs to a key that ran (bpftrace: one line per
    # bucket, D: one histogram per key)
    histograms = {tuple(k.split(", ")[:2]) for k in re.findall(r"^@amount_minor\[(.*)\]:", out, re.M)}
    require(histograms == set(X.AMOUNTS), "histograms for %s, want %s" % (histograms, set(X.AMOUNTS)))
    require(not re.search(r"^@(count|sum_minor|avg_minor)\b", out, re.M), "raw maps printed at exit")


def case_biz_metrics_race():
    """4 threads fire one row at full speed: every figure is exact under
    both tracers, the summaries (biz_metrics' approved count, errors'
    count) and the rows (payments, amounts, errors): D's count()/sum() and
    the bpftrace twins' count()/sum() maps and cpu-keyed counters are
    per-CPU."""
    if S.TRACER.dtrace:  # one dtrace -p per process
        out = run("race", [("biz", "biz_metrics", [1], False)])
        out.update(run("race", [("err", "errors", [1], False)]))
    else:
        out = run("race", [("biz", "biz_metrics", [1], False), ("err", "errors", [1], False)])
    body = section(out["biz"], r"TOTAL since start")
    summary = biz_summary("\n".join(body[:3]))
    require(summary["approved"] == X.RACE_TOTAL and summary["declined"] == 0,
            "biz_metrics TOTAL summary %s, want %d approved" % (summary, X.RACE_TOTAL))
    m = re.search(r"TOTAL since start\nerrors (\d+)$", out["err"], re.M)
    require(m and int(m.group(1)) == X.RACE_TOTAL, "errors TOTAL summary %s, want %d"
            % (m and m.group(1), X.RACE_TOTAL))
    biz = biz_breakdowns(body, total=True)
    err = error_rows(section(out["err"], r"TOTAL since start"), "@errors_total")
    require(biz["payments"] == X.RACE_PAYMENTS and biz["amounts"] == X.RACE_AMOUNTS,
            "biz_metrics TOTAL rows %s, want %s and %s" % (biz, X.RACE_PAYMENTS, X.RACE_AMOUNTS))
    require(err == X.RACE_ERROR_ROWS, "errors TOTAL rows %s, want %s" % (err, X.RACE_ERROR_ROWS))
    print("rows under contention: payments %s, amounts %s, errors %s (of %d events)"
          % (biz["payments"], biz["amounts"], err, X.RACE_TOTAL))


def tps_table(out):
    """tps' lines: [(txns, failed, fail%, partial)]; any other line that
    starts with a time, or a note in parentheses, fails."""
    lines = []
    for line in out.split("\n"):
        m = re.match(r"^\d\d:\d\d:\d\d\s+(\d+)\s+(\d+)\s+(\d+)(\s+partial \d+ ms)?$", line)
        if m:
            lines.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), bool(m.group(4))))
        else:
            require(not re.match(r"^(\d\d:\d\d:\d\d|\()", line), "tps printed %r" % line)
    return lines


def check_tps(out):
    """The workload's three busy seconds, each whole and exact (TXNS,
    FAILED, FAIL%), idle seconds around them, the first and last lines
    partial: under both tracers, with nothing tolerated."""
    lines = tps_table(out)
    require(len(lines) >= 5, "too few lines: %s" % lines)
    require(lines[0][3] and lines[-1][3], "first and last seconds must be marked partial: %s" % lines)
    require(not any(p for _, _, _, p in lines[1:-1]), "only the first and last may be partial: %s" % lines)
    want_pct = [f * 100 // t if t else 0 for t, f, _, _ in lines]
    require([p for _, _, p, _ in lines] == want_pct, "FAIL%% column %s, want %s" % (lines, want_pct))
    busy = [(t, f) for t, f, _, _ in lines if t]
    require(busy == X.TPS_SECONDS, "busy seconds %s, want %s" % (busy, X.TPS_SECONDS))
    require([p for t, _, p, _ in lines if t] == X.TPS_FAIL_PCT,
            "FAIL%% of the busy seconds, want %s" % X.TPS_FAIL_PCT)
    first = [i for i, l in enumerate(lines) if l[0]][0]
    require(all(lines[first + i][0] for i in range(3)), "the busy seconds are not consecutive: %s" % lines)


def case_tps():
    """Lines printed as the seconds end (D: every CPU kept busy, so that
    Oracle's DTrace's tick fires)."""
    extra = ["--keep-cpus-busy"] if S.TRACER.dtrace else []
    check_tps(run("tps", [("tps", "tps", [], False)], extra=extra)["tps"])


def case_tps_stalled():
    """The tracer (dtrace and tps.d's reader, or bpftrace) stopped from
    before the first burst until after the last: each second still exact
    once it reads again (tps.d's counts are cumulative and never deleted;
    a per-second count deleted after printing lost or merged seconds)."""
    check_tps(run("tps", [("tps", "tps", [], False)], stall_s=0.5)["tps"])


def case_past_max_cpu():
    """The bpftrace twins that sum per-CPU maps over CPU ids 0..511 (tps,
    biz_metrics, errors, page_faults) refuse, with one line and no figures,
    once an event fires on a CPU id past that: copies with the limit cut to
    1 (every "512" made "1"), the workload pinned to CPU 1, then to CPU 0
    (the copies' figures as exact as the scripts')."""
    require(len(os.sched_getaffinity(0)) >= 2 and {0, 1} <= os.sched_getaffinity(0),
            "this case needs CPUs 0 and 1")
    paths = {}
    for name in ("tps", "biz_metrics", "errors", "page_faults"):
        text = open(os.path.join(BT_SCRIPTS, name + ".bt")).read()
        require(text.count("512") >= 2, "%s.bt: no MAX_CPU limit of 512 to cut" % name)
        paths[name] = os.path.join(S.TRACER.tmp, name + "_max_cpu_1.bt")
        with open(paths[name], "w") as f:
            f.write(text.replace("512", "1"))
    business = [("biz_metrics", paths["biz_metrics"], [1], False), ("errors", paths["errors"], [1], False)]
    faulting = os.path.join(S.TRACER.tmp, "system-workload-file")  # the system mode's file
    refusal = re.compile(r"^refused: an event on CPU 1; this script sums CPU ids 0\.\.511 only", re.M)
    for cpu in (1, 0):
        out = side_by_side([("business", business, {"cpu": cpu}),
                            ("tps", [("tps", paths["tps"], [], False)], {"cpu": cpu}),
                            ("system", [("page_faults", paths["page_faults"], [1], True)],
                             {"extra": ["--path", faulting], "stop_early": ["page_faults"], "cpu": cpu})])
        for name, text in sorted(out.items()):
            if cpu == 1:
                lines = [l for l in text.splitlines() if l.strip()]
                require(len(refusal.findall(text)) == 1 and refusal.match(lines[-1])
                        and "TOTAL" not in text and not re.search(r"^@", text, re.M),
                        "%s on CPU 1: one refusal line last, no totals, no maps:\n%s" % (name, text))
            else:
                require("refused" not in text, "%s on CPU 0 refused:\n%s" % (name, text))
        if cpu == 0:
            check_tps(out["tps"])
            body = section(out["biz_metrics"], r"TOTAL since start")
            require(biz_summary("\n".join(body[:3])) == X.BIZ_SUMMARY, "biz_metrics TOTAL on CPU 0: %s" % body[:3])
            body = section(out["errors"], r"TOTAL since start")
            require(error_rows(body, "@errors_total") == X.ERROR_ROWS, "errors TOTAL on CPU 0: %s" % body)
            faults = re.search(r"^TOTAL +(\d+)$", out["page_faults"], re.M)
            require(faults and int(faults.group(1)) > 0, "page_faults TOTAL on CPU 0: %s" % out["page_faults"])
    print("tps, biz_metrics, errors, page_faults: refused past MAX_CPU, exact below it")

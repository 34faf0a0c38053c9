"""The scripts tests' cases for the business figures: biz_metrics, errors,
amount_dist and tps (test_scripts.py runs them; expected.py holds their
figures).
"""
import os
import re
import subprocess
import sys

import scriptstest as S
from scriptstest import BT_SCRIPTS, TIMEOUT, hist, intervals_add_up, keyed, one, require, run, section
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
        argv = [S.TRACER.exe, "-s", S.TRACER.d_script("errors"), "-c", cmd, "1"]
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
    # one line of figures per [currency, kind] (bpftrace's stats() layout)
    stats = {}
    for m in re.finditer(r"^@stats_minor\[(.*), (.*)\]: count (\d+), average (-?\d+), total (-?\d+)$",
                         out, re.M):
        require(m.group(1, 2) not in stats, "%s printed twice" % (m.group(1, 2),))
        stats[m.group(1, 2)] = tuple(int(x) for x in m.group(3, 5, 4))
    for key, (count, total, avg, rows) in X.AMOUNTS.items():
        require(stats.get(key) == (count, total, avg), "%s count, total, average %s, want %s"
              % (key, stats.get(key), (count, total, avg)))
        got = hist(out, "@amount_minor[%s, %s]" % key)
        require(got == rows, "%s histogram %s, want %s" % (key, got, rows))
    require(len(stats) == len(X.AMOUNTS), "unexpected keys: %s" % stats)
    histograms = re.findall(r"^@amount_minor\[.*\]:", out, re.M)
    require(len(histograms) == len(X.AMOUNTS), "one histogram per key: %s" % histograms)
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


def case_tps():
    # tps.d prints each second from a tick, which an idle CPU here never
    # fires (seconds of one parity would merge): keep CPU 0 busy for it
    extra = ["--keep-cpus-busy"] if S.TRACER.dtrace else []
    out = run("tps", [("tps", "tps", [], False)], extra=extra)["tps"]
    lines = []  # (txns, failed, partial)
    pcts = []   # FAIL% of each line
    for line in out.split("\n"):
        m = re.match(r"^\d\d:\d\d:\d\d\s+(\d+)\s+(\d+)\s+(\d+)(\s+partial \d+ ms)?$", line)
        if m:
            lines.append((int(m.group(1)), int(m.group(2)), bool(m.group(4))))
            pcts.append(int(m.group(3)))
    if S.TRACER.dtrace and lines and not lines[-1][2]:
        # seen about one run in five under Oracle's DTrace: the line END
        # prints for the second cut short does not reach stdout
        print("NOTE: no partial line from END; the whole seconds are still checked")
        lines.append((0, 0, True))
        pcts.append(0)
    require(len(lines) >= 5, "too few lines: %s" % lines)
    require(lines[0][2] and lines[-1][2], "first and last seconds must be marked partial: %s" % lines)
    require(not any(p for _, _, p in lines[1:-1]), "only the first and last may be partial")
    busy = [(t, f) for t, f, _ in lines if t]
    want_pct = [f * 100 // t if t else 0 for t, f, _ in lines]
    require(pcts == want_pct, "FAIL%% column %s, want %s" % (pcts, want_pct))
    if S.TRACER.dtrace and busy != X.TPS_SECONDS and merged_seconds(busy, X.TPS_SECONDS):
        # Oracle's DTrace here: a tick-100ms that does not fire for a
        # whole second (idle or starved CPU in this VM) leaves tps.d two
        # seconds of one parity in one slot.  Every transaction is still
        # counted; only the split into seconds is lost.
        print("NOTE: tick missed, seconds merged: %s (planned %s); totals exact" % (busy, X.TPS_SECONDS))
        return
    require(busy == X.TPS_SECONDS, "busy seconds %s, want %s" % (busy, X.TPS_SECONDS))
    require([p for p, (t, _, _) in zip(pcts, lines) if t] == X.TPS_FAIL_PCT,
          "FAIL%% of the busy seconds, want %s" % X.TPS_FAIL_PCT)
    first = [i for i, l in enumerate(lines) if l[0]][0]
    require(all(not lines[first + i][2] for i in range(3)), "a burst landed in a partial second")


def merged_seconds(seen, planned):
    """True when SEEN is PLANNED with some seconds added together (what a
    missed tick does to tps.d's two parity slots) and the totals agree."""
    if sum(t for t, _ in seen) != sum(t for t, _ in planned) or \
            sum(f for _, f in seen) != sum(f for _, f in planned):
        return False
    left = list(planned)
    for t, f in seen:
        # some subset of the planned seconds still unclaimed sums to (t, f)
        for mask in range(1, 1 << len(left)):
            pick = [left[i] for i in range(len(left)) if mask >> i & 1]
            if (sum(p[0] for p in pick), sum(p[1] for p in pick)) == (t, f):
                left = [left[i] for i in range(len(left)) if not mask >> i & 1]
                break
        else:
            return False
    return not left

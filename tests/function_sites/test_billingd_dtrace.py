#!/usr/bin/env python3
"""billingd built with function probe sites, under billing-load, traced by the
function-site spelling of biz_metrics.d, tps.d and request_latency.d under
Oracle's DTrace (pid provider): the figures equal the database rows and
billing-load's counts.

usage: test_billingd_dtrace.py BILLINGD BILLING_LOAD D_SCRIPTS_DIR

The scripts are the shipped ones, rewritten by d-scripts/function_sites.py
(the one transform: billing$target:::NAME -> pid$target::billing_fire_NAME:entry),
each attached with dtrace -p to a fresh billingd for a whole billing-load
run and stopped with SIGINT, so it prints its totals at END:
  biz_metrics.d     every TOTAL row (payments by gateway and code, amounts
                    by currency and metric, refunds by reason) == the same
                    GROUP BY over the database
  tps.d             the per-second TXNS add up to every transaction
                    written, every second printed;
                    FAILED == 0 as billing-load saw no 5xx
  request_latency.d the per-handler histograms and the table's COUNT add up
                    to every response billing-load received; none unmeasured
                    (a function-site build clocks every request)
"""
import os
import re
import shutil
import sqlite3
import sys
import tempfile

# The load each script sees (docs/function-sites.md says it)
LOAD_S, CONNECTIONS = 5, 8
INVALID_RATE, REFUND_RATE, DECLINE_RATE = 0.08, 0.4, 0.15

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "billingd"))
import billingtest as bt  # noqa: E402
import functionsitetest  # noqa: E402
from billingdtest import Billingd, run_load  # noqa: E402

SCRIPTS = {  # name: (dtrace options before -s, $1.. arguments); -C where the #! line has it
    "biz_metrics.d": (["-C"], ["600"]),  # interval 600 s: only the TOTAL at exit
    "tps.d": (["-C"], []),
    "request_latency.d": ([], ["100", "600"]),
}


def transformed(transform, d_scripts, work):
    """{script name: path of its function-site spelling}."""
    out = {}
    for name in SCRIPTS:
        r = bt.run([sys.executable, transform, os.path.join(d_scripts, name)])
        text = r.stdout
        ok = (r.returncode == 0 and "pid$target::billing_fire_" in text
              and not re.search(r"\bbilling(\$target|\*)?:::", text))
        bt.check(ok, "%s: transformed to the function-site spelling (%s)"
                 % (name, r.stderr.strip() or "pid$target::billing_fire_*:entry"))
        out[name] = os.path.join(work, name)
        with open(out[name], "w") as f:
            f.write(text)
    return out


def book_rows(db):
    """biz_metrics.d's TOTAL rows as the database has them:
    {(metric, currency, label, code): (count, amount)}."""
    conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    queries = [
        "SELECT 'approved', currency, gateway, 0, count(*), sum(amount_minor) FROM payments"
        " WHERE status = 'approved' GROUP BY currency, gateway",
        "SELECT 'declined', currency, gateway, decline_code, count(*), sum(amount_minor) FROM payments"
        " WHERE status = 'declined' GROUP BY currency, gateway, decline_code",
        "SELECT 'invoices', currency, '-', 0, count(*), sum(amount_minor) FROM invoices GROUP BY currency",
        "SELECT 'refunds', p.currency, r.reason, 0, count(*), sum(r.amount_minor)"
        " FROM refunds r JOIN payments p ON p.id = r.payment_id GROUP BY p.currency, r.reason",
    ]
    try:
        return {tuple(row[:4]): tuple(row[4:]) for q in queries for row in conn.execute(q)}
    finally:
        conn.close()


def section(text, marker):
    """The lines after the first line containing MARKER."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if marker in line:
            return lines[i + 1:]
    return []


def biz_tables(text):
    """biz_metrics.d's TOTAL breakdowns: {"payments": {(gateway, code): n},
    "amounts": {(currency, metric): n}, "refunds": {reason: n}}."""
    total = "\n".join(section(text, "TOTAL since start"))
    return {"payments": {(g, int(c)): int(n) for g, c, n in
                         re.findall(r"^@payments_total\[(.*), (-?\d+)\]: (\d+)$", total, re.M)},
            "amounts": {(cur, m): int(n) for cur, m, n in
                        re.findall(r"^@amount_minor_total\[(.*), (\w+)\]: (-?\d+)$", total, re.M)},
            "refunds": {r: int(n) for r, n in re.findall(r"^@refunds_total\[(.*)\]: (\d+)$", total, re.M)}}


def book_tables(books):
    """The database's rows (book_rows) laid out as biz_metrics.d's breakdowns."""
    out = {"payments": {}, "amounts": {}, "refunds": {}}
    for (metric, currency, label, code), (count, amount) in books.items():
        if metric in ("approved", "declined"):
            out["payments"][label, code] = out["payments"].get((label, code), 0) + count
        if metric == "refunds":
            out["refunds"][label] = out["refunds"].get(label, 0) + count
        out["amounts"][currency, metric] = out["amounts"].get((currency, metric), 0) + amount
    return out


def tps_lines(text):
    return [(int(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"^\d\d:\d\d:\d\d[ \t]+(\d+)[ \t]+(\d+)", text, re.M)]


def latency_totals(text):
    """(table rows {handler: (count, slow)}, unmeasured or None,
    {handler: sum of its quantize() histogram's counts})."""
    rows, hist, handler = {}, {}, None
    total = section(text, "TOTAL since start")
    for line in total:
        f = line.split()
        if len(f) == 3 and f[1].isdigit() and f[2].isdigit():
            rows[f[0]] = (int(f[1]), int(f[2]))
        m = re.match(r"@usecs\[(.*)\]:$", line.strip())
        if m:
            handler = m.group(1)
            hist[handler] = 0
        m = re.match(r"\s*-?\d+\s+\|[@ ]*\s+(\d+)\s*$", line)
        if m and handler is not None:
            hist[handler] += int(m.group(1))
    m = re.search(r"UNMEASURED \(duration 0, skipped\): (\d+)", text)
    return rows, int(m.group(1)) if m else None, hist


def traced_run(dtrace, billingd, load_exe, name, script):
    """A fresh billingd under billing-load, traced by SCRIPT for the whole
    run: (dtrace's output, billing-load's summary, row counts, biz rows)."""
    opts, args = SCRIPTS[name]
    svc = Billingd(billingd, "--gateway-latency-ms", "0.5", "--decline-rate", str(DECLINE_RATE), "--threads", "4")
    tracer, out, load = None, "", None
    try:
        status, _, _ = svc.request("GET", "/healthz")  # before tracing: not counted
        bt.check(status == 200, "%s: billingd answers before tracing" % name)
        tracer = functionsitetest.Dtrace(dtrace, script, ["-p", str(svc.pid), *args], options=opts)
        # BEGIN's first line: the table's "Hit Ctrl-C", JSON's start object
        ready = "Hit Ctrl-C"
        if bt.check(tracer.wait_for(ready, 90), "%s: attached (BEGIN ran)" % name):
            rc, load, err = run_load(load_exe, svc.url, "--duration", str(LOAD_S), "--concurrency", str(CONNECTIONS),
                                     "--invalid-rate", str(INVALID_RATE), "--refund-rate", str(REFUND_RATE),
                                     "--seed", "7")
            bt.check(rc == 0, "%s: billing-load exits 0 (%s)" % (name, err.strip()[-300:]))
        code, out = tracer.stop()
        tracer = None
        bt.check(code == 0, "%s: dtrace exits 0 on SIGINT (%s)" % (name, code))
    finally:
        if tracer is not None:
            tracer.stop()
        svc_rc, svc_out = svc.stop()
    print("---- %s ----\n%s\nbilling-load: %s" % (name, out, load))
    bt.check(not re.search(r"^dtrace: ", out, re.M),
             "%s: no message from dtrace (error, drop, failure)" % name)
    bt.check(svc_rc == 0 and "stopped cleanly" in svc_out, "%s: billingd stopped cleanly" % name)
    real = bool(load and load["invoices_created"] > 100 and load["refunds"] > 10
                and load["payments_declined"] > 10 and load["client_errors"] > 10
                and load["transport_errors"] == 0 and load["server_errors"] == 0
                and load["unexpected"] == 0)
    bt.check(real, "%s: a real run (invoices, refunds, declines, rejections; no transport "
             "error, 5xx or unexpected answer)" % name)
    rows = svc.counts()
    books = book_rows(svc.db)
    svc.cleanup()
    return out, load if real else None, rows, books


def check_biz_metrics(out, load, rows, books):
    """Every TOTAL row, row by row, against the books; the counts against
    the client."""
    got, want = biz_tables(out), book_tables(books)
    for table in ("payments", "amounts", "refunds"):
        bt.check(got[table] and got[table] == want[table],
                 "biz_metrics.d TOTAL %s == the database's, row by row (%d rows; differing: %s)"
                 % (table, len(want[table]), sorted(set(got[table].items()) ^ set(want[table].items()))[:6]))
    total = "\n".join(section(out, "TOTAL since start"))
    inv = re.search(r"^invoices (\d+)$", total, re.M)
    pay = re.search(r"^payments approved (\d+) declined (\d+)", total, re.M)
    ref = re.search(r"^refunds (\d+)$", total, re.M)
    summary = {"invoices": int(inv.group(1)) if inv else None, "approved": int(pay.group(1)) if pay else None,
               "declined": int(pay.group(2)) if pay else None, "refunds": int(ref.group(1)) if ref else None}
    for metric, client in (("approved", "payments_approved"), ("declined", "payments_declined"),
                           ("invoices", "invoices_created"), ("refunds", "refunds")):
        bt.check(summary[metric] == rows[metric] == load[client],
                 "biz_metrics.d %s %s == rows %d == billing-load %s %d"
                 % (metric, summary[metric], rows[metric], client, load[client]))


def check_tps(out, load, rows, books):
    """The seconds add up to every transaction written; none failed."""
    seconds = tps_lines(out)
    written = rows["invoices"] + rows["approved"] + rows["declined"] + rows["refunds"]
    txns, failed = sum(t for t, _ in seconds), sum(f for _, f in seconds)
    bt.check(len(seconds) >= 5, "tps.d printed a line per second (%d lines)" % len(seconds))
    bt.check("not printed" not in out, "tps.d: every second printed (none refused)")
    bt.check(txns == written, "tps.d TXNS summed %d == transactions written %d" % (txns, written))
    bt.check(failed == load["server_errors"] == 0, "tps.d FAILED %d == 5xx answers %d == 0"
             % (failed, load["server_errors"]))


def check_request_latency(out, load, rows, books):
    """Every response counted, each one measured."""
    table, unmeasured, hist = latency_totals(out)
    bt.check(unmeasured == 0, "request_latency.d: no request unmeasured (got %s)" % unmeasured)
    bt.check(sum(hist.values()) == load["responses"],
             "request_latency.d histograms: %d requests == responses received %d (%s)"
             % (sum(hist.values()), load["responses"], hist))
    bt.check(sum(r[0] for r in table.values()) == load["responses"],
             "request_latency.d TOTAL COUNT %d == responses received %d"
             % (sum(r[0] for r in table.values()), load["responses"]))
    bt.check(table and all(slow <= n for n, slow in table.values()),
             "request_latency.d: per handler slow <= count (%s)" % table)
    bt.check({h: r[0] for h, r in table.items()} == hist,
             "request_latency.d: each handler's COUNT == its histogram's (%s, %s)" % (table, hist))


CHECKS = {"biz_metrics.d": check_biz_metrics, "tps.d": check_tps,
          "request_latency.d": check_request_latency}


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    billingd, load_exe, d_scripts = sys.argv[1:]
    bt.require_tracing(tracer=None)
    dtrace = bt.require_dtrace()
    transform = os.path.join(d_scripts, "function_sites.py")
    if not bt.check(os.path.exists(transform), "the D transform is there: %s" % transform):
        bt.finish()
    work = tempfile.mkdtemp(prefix="fsite-billingd-")
    try:
        # Oracle's DTrace names a pid-provider uprobe after the file's
        # device and inode, shared by every dtrace on that file: billingd's
        # own copy shares it with no other test.
        billingd = bt.private_copy(billingd, os.path.join(work, "own"))
        scripts = transformed(transform, d_scripts, work)
        # One script per run: Oracle's DTrace grabs the process (-p), and a
        # second dtrace cannot while the first holds it ("not a
        # dynamically-linked executable").
        for name, check in CHECKS.items():
            out, load, rows, books = traced_run(dtrace, billingd, load_exe, name, scripts[name])
            if load:
                check(out, load, rows, books)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bt.finish()


if __name__ == "__main__":
    sys.exit(main())

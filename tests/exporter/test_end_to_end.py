#!/usr/bin/env python3
"""End to end: billingd under billing-load with a fixed mix, billing-exporter
attached with --pid, a real Prometheus scraping it every second with the
shipped rules.  After the load, the totals Prometheus answers over its
HTTP API equal billing-load's counts and the database rows exactly;
histogram_quantile over billing_request_duration_seconds lands inside
what billing-load measured; every dashboard panel's PromQL returns data;
the target's up metric drops to 0 when billingd stops."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "billingd"))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402
from billingdtest import Billingd, run_load  # noqa: E402  (tests/billingd/billingdtest.py)

h.require_exporter_can_run()
bt.require_program("prometheus", "prometheus")
exe = h.env_path("BX_EXPORTER")
billingd, load_exe = h.env_path("BX_BILLINGD"), h.env_path("BX_BILLING_LOAD")
DURATION_BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]


def bucket_upper(seconds):
    return next((b for b in DURATION_BOUNDS if seconds <= b), float("inf"))


def wait_for(what, fn, timeout=30):
    return bt.wait_for(what, fn, timeout)


svc = Billingd(billingd, "--gateway-latency-ms", "0.5", "--decline-rate", "0.15", "--threads", "4")
exporter = prom = None
try:
    assert svc.request("GET", "/healthz")[0] == 200  # before the exporter: not counted
    exporter = h.Exporter(exe, "--pid", str(svc.pid))
    prom = h.Prometheus(["127.0.0.1:%d" % exporter.port],
                        rule_files=[os.path.join(h.MONITORING, "rules", "billing.rules.yml")])
    wait_for("Prometheus to scrape the exporter",
             lambda: prom.scalar('up{job="billing-exporter"}') == 1)
    rc, load, err = run_load(load_exe, svc.url, "--duration", "5", "--concurrency", "6",
                             "--invalid-rate", "0.08", "--refund-rate", "0.4", "--seed", "7")
    # Counters are still once the load is over: wait for a scrape after it.
    final = h.total(exporter.samples(), "billing_requests_total")
    wait_for("a scrape after the load",
             lambda: prom.scalar("sum(billing_requests_total)") == final)
    time.sleep(2.5)  # recording rules evaluate every second: let them see the last scrape
    rows = svc.counts()
    q = prom.scalar

    print("billing-load:", json.dumps(load))
    bt.check(rc == 0 and load["transport_errors"] == 0 and load["unexpected"] == 0,
             "billing-load ran clean (exit %s)" % rc)
    bt.check(load["invoices_created"] > 100 and load["refunds"] > 10 and load["payments_declined"] > 10
             and load["client_errors"] > 10, "a real mix")
    for what, expr, client, db in [
            ("invoices", "sum(billing_invoices_total)", load["invoices_created"], rows["invoices"]),
            ("payments approved", 'sum(billing_payments_total{outcome="approved"})',
             load["payments_approved"], rows["approved"]),
            ("payments declined", 'sum(billing_payments_total{outcome="declined"})',
             load["payments_declined"], rows["declined"]),
            ("refunds", "sum(billing_refunds_total)", load["refunds"], rows["refunds"])]:
        got = q(expr)
        bt.check(got == client == db, "%s: Prometheus %s == billing-load %s == rows %s"
                 % (what, got, client, db))
    bt.check(q('sum(billing_payment_declines_total)') == rows["declined"], "declines by code add up")
    bt.check(q("sum(billing_requests_total)") == load["responses"],
             "requests: Prometheus %s == responses %s" % (q("sum(billing_requests_total)"), load["responses"]))
    if q("sum(billing_requests_total)") != load["responses"]:
        # which handler and status the difference is in (a count nobody expects)
        for r in prom.query("sum by (handler, status) (billing_requests_total)"):
            print("requests", r["metric"], r["value"][1])
        print("billingd's log:\n" + svc.output()[-2000:])
    ok_answers = (load["invoices_created"] + load["payments_approved"] + load["payments_declined"]
                  + load["refunds"] + load["invoice_reads"])
    bt.check(q('sum(billing_requests_total{status="0"})') == ok_answers, "status 0 == 2xx answers")
    bt.check(q("sum(billing_errors_total)") == load["client_errors"], "errors == 4xx answers")
    bt.check(q('sum(billing_transactions_total{outcome="committed"})')
             == rows["invoices"] + rows["approved"] + rows["declined"] + rows["refunds"],
             "committed transactions == rows written")
    bt.check(q("sum(billing_request_duration_seconds_count)") == load["responses"],
             "every request's duration observed")
    for quantile in ("p50", "p95", "p99"):
        est = q("histogram_quantile(0.%s, sum by (le) (billing_request_duration_seconds_bucket))"
                % quantile[1:])
        client_s = load["latency_ms"][quantile] / 1000
        bt.check(est is not None and 0 < est <= bucket_upper(client_s),
                 "%s: histogram_quantile %.6f s within billing-load's %.6f s (its bucket ends at %s)"
                 % (quantile, est or -1, client_s, bucket_upper(client_s)))

    dash = json.load(open(os.path.join(h.MONITORING, "grafana", "billing-dashboard.json")))
    for panel in dash["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", "1m")
            result = prom.query(expr)
            bt.check(len(result) > 0, "panel %r returns data: %s" % (panel["title"], expr))

    svc.stop()
    up = h.total(exporter.samples(), "billing_exporter_target_up", target="pid:%d" % svc.pid)
    bt.check(up == 0, "billingd stopped: /metrics still serves, its target up is 0")
    wait_for("Prometheus to see the target down",
             lambda: prom.scalar("billing_exporter_target_up") == 0, timeout=15)
    rc, out = exporter.stop()
    exporter = None
    bt.check(rc == 0, "exporter exits 0 on SIGTERM")
finally:
    if exporter:
        print(exporter.stop()[1])
    if prom:
        prom.cleanup()
    svc.cleanup()
bt.finish()

#!/usr/bin/env python3
"""Ground truth under load: with bpftrace attached for the whole run, what
the probes counted equals what the database holds equals what the load
generator saw.  Nothing lost, nothing counted twice.

usage: test_ground_truth.py BILLINGD BILLING_LOAD GROUND_TRUTH_BT [SECONDS]
"""
import sys

from harness import Billingd, Bpftrace, Checker, bpftrace_usable, parse_maps, run_load, skip

billingd_exe, load_exe, program = sys.argv[1:4]
seconds = sys.argv[4] if len(sys.argv) > 4 else "6"

reason = bpftrace_usable()
if reason:
    skip(reason)

check = Checker()
svc = Billingd(billingd_exe, "--gateway-latency-ms", "0.5", "--decline-rate", "0.15",
               "--threads", "4")
tracer = None
try:
    status, _, _ = svc.request("GET", "/healthz")  # before tracing: not counted
    assert status == 200
    tracer = Bpftrace(program, svc.pid)
    rc, load, err = run_load(load_exe, svc.url, "--duration", seconds, "--concurrency", "8",
                             "--invalid-rate", "0.08", "--refund-rate", "0.4", "--seed", "7")
    trace_rc, trace_out = tracer.stop()
    tracer = None
finally:
    if tracer is not None:
        tracer.stop()
    svc_rc, svc_out = svc.stop()

print("billing-load:", load)
print(trace_out)
check.eq("billing-load exit code", rc, 0)
check.eq("bpftrace exit code", trace_rc, 0)
check.eq("billingd exit code", svc_rc, 0)
check.true("billingd stopped cleanly", "stopped cleanly" in svc_out, svc_out)
rows = svc.counts()
svc.cleanup()
maps = parse_maps(trace_out)
get = lambda name, key=None: maps.get((name, key), 0)

check.true("a real run", load["invoices_created"] > 100 and load["refunds"] > 10
           and load["payments_declined"] > 10 and load["client_errors"] > 10, str(load))
check.eq("no transport errors", load["transport_errors"], 0)
check.eq("no unexpected answers", load["unexpected"], 0)
check.eq("no 5xx", load["server_errors"], 0)

# The books: probe == row == client.
check.eq("invoice-create probes == invoice rows", get("invoice_create"), rows["invoices"])
check.eq("invoice rows == 201s counted by billing-load", rows["invoices"],
         load["invoices_created"])
declined_probes = sum(v for (name, key), v in maps.items() if name == "payment_auth"
                      and key != "0")
check.eq("payment-auth approved probes == approved rows", get("payment_auth", "0"),
         rows["approved"])
check.eq("approved rows == approvals counted", rows["approved"], load["payments_approved"])
check.eq("payment-auth declined probes == declined rows", declined_probes, rows["declined"])
check.eq("declined rows == declines counted", rows["declined"], load["payments_declined"])
check.eq("refund-process probes == refund rows", get("refund_process"), rows["refunds"])
check.eq("refund rows == refunds counted", rows["refunds"], load["refunds"])
check.eq("no payment over-refunded", rows["over_refunded"], 0)
check.eq("refund sums agree with payments", rows["refund_sums_wrong"], 0)

# Requests: one request-start and one request-done per response.
done_total = sum(v for (name, _), v in maps.items() if name == "request_done")
check.eq("request-done probes == responses received", done_total, load["responses"])
check.eq("request-start probes == responses received", get("request_start"), load["responses"])
ok_answers = (load["invoices_created"] + load["payments_approved"] + load["payments_declined"]
              + load["refunds"] + load["invoice_reads"])
check.eq("request-done status 0 == 2xx answers", get("request_done", "0"), ok_answers)
for status in sorted({kind.split()[0] for kind in load["rejections"]}):
    want = sum(c for k, c in load["rejections"].items() if k.split()[0] == status)
    check.eq(f"request-done status {status} == {status}s received", get("request_done", status),
             want)
error_total = sum(v for (name, _), v in maps.items() if name == "error")
check.eq("error probes == 4xx answers", error_total, load["client_errors"])

# Transactions: each kind committed as often as its rows were written.
for kind, want in (("invoice", rows["invoices"]),
                   ("payment", rows["approved"] + rows["declined"]),
                   ("refund", rows["refunds"])):
    check.eq(f"transaction-done {kind} committed", get("tx_done", f"{kind}, 0"), want)
    started = get("tx_start", kind)
    ended = sum(v for (name, key), v in maps.items() if name == "tx_done"
                and key.startswith(kind + ","))
    check.eq(f"transaction-start {kind} == transaction-done {kind}", started, ended)
check.eq("gateway authorize calls == payments", get("gateway_call_done", "authorize"),
         rows["approved"] + rows["declined"])
check.eq("gateway refund calls == refunds", get("gateway_call_done", "refund"), rows["refunds"])
check.eq("no failed db query", sum(v for (name, key), v in maps.items()
                                   if name == "db_query_done" and key != "0"), 0)
check.finish()

#!/usr/bin/env python3
"""API tests of billingd on an ephemeral port: every endpoint, every kind of
bad input (status, error body, nothing written), a locked database (503,
never lost), clean shutdown, bad command lines of both programs and their
--help.

usage: test_api.py BILLINGD BILLING_LOAD
"""
import re
import sqlite3
import subprocess
import sys
import threading
import time

from billingdtest import Billingd, Checker, PendingRequest

billingd_exe, load_exe = sys.argv[1], sys.argv[2]
check = Checker()


def invoice(svc, amount=1000, currency="EUR", customer=42):
    status, doc, _ = svc.request("POST", "/invoices", {
        "customer_id": customer, "amount_minor": amount, "currency": currency})
    assert status == 201, (status, doc)
    return doc


def pay(svc, invoice_id, amount, currency="EUR", gateway="stripe-sim"):
    return svc.request("POST", "/payments/authorize", {
        "invoice_id": invoice_id, "amount_minor": amount, "currency": currency,
        "gateway": gateway})


def refund(svc, payment_id, amount, reason="requested_by_customer"):
    return svc.request("POST", "/refunds", {
        "payment_id": payment_id, "amount_minor": amount, "reason": reason})


def rejected(svc, what, method, path, body, want_status, want_code, headers=None):
    """A bad request: its status, its error body, and no row written."""
    before = svc.counts()
    status, doc, hdrs = svc.request(method, path, body, headers)
    code = (doc or {}).get("error", {}).get("code") if isinstance(doc, dict) else None
    message = (doc or {}).get("error", {}).get("message") if isinstance(doc, dict) else None
    check.eq(f"{what}: status", status, want_status)
    check.eq(f"{what}: error code", code, want_code)
    check.true(f"{what}: error message", isinstance(message, str) and message)
    check.eq(f"{what}: nothing written", svc.counts(), before)
    return hdrs


def test_endpoints(svc):
    status, doc, hdrs = svc.request("GET", "/healthz")
    check.eq("healthz", (status, doc), (200, {"status": "ok"}))
    check.eq("content type", hdrs.get("Content-Type"), "application/json")

    inv = invoice(svc, 1000, "EUR", 7)
    check.eq("invoice created", {k: inv[k] for k in
             ("customer_id", "amount_minor", "currency", "paid_minor", "status")},
             {"customer_id": 7, "amount_minor": 1000, "currency": "EUR", "paid_minor": 0,
              "status": "open"})
    status, doc, _ = svc.request("GET", f"/invoices/{inv['id']}")
    check.eq("invoice read back", (status, doc), (200, inv))

    # Partial payments up to the total, then no more.
    status, p1, _ = pay(svc, inv["id"], 400)
    check.eq("partial payment approved", (status, p1["status"], p1["decline_code"]),
             (201, "approved", 0))
    rejected(svc, "payment above the balance", "POST", "/payments/authorize",
             {"invoice_id": inv["id"], "amount_minor": 601, "currency": "EUR",
              "gateway": "adyen-sim"}, 422, "amount_exceeds_balance")
    rejected(svc, "payment in another currency", "POST", "/payments/authorize",
             {"invoice_id": inv["id"], "amount_minor": 600, "currency": "USD",
              "gateway": "adyen-sim"}, 422, "currency_mismatch")
    status, p2, _ = pay(svc, inv["id"], 600, gateway="adyen-sim")
    check.eq("rest paid", (status, p2["status"], p2["gateway"]), (201, "approved", "adyen-sim"))
    status, doc, _ = svc.request("GET", f"/invoices/{inv['id']}")
    check.eq("invoice now paid", (doc["paid_minor"], doc["status"]), (1000, "paid"))
    rejected(svc, "payment of a paid invoice", "POST", "/payments/authorize",
             {"invoice_id": inv["id"], "amount_minor": 1, "currency": "EUR",
              "gateway": "stripe-sim"}, 409, "invoice_already_paid")

    # Refunds: never more than was captured.
    status, r1, _ = refund(svc, p1["id"], 150, "duplicate")
    check.eq("partial refund", (status, r1["amount_minor"], r1["refunded_total_minor"],
                                r1["currency"]), (201, 150, 150, "EUR"))
    rejected(svc, "over-refund", "POST", "/refunds",
             {"payment_id": p1["id"], "amount_minor": 251, "reason": "fraud"},
             422, "refund_exceeds_captured")
    status, r2, _ = refund(svc, p1["id"], 250, "fraud")
    check.eq("refund of the rest", (status, r2["refunded_total_minor"]), (201, 400))
    rejected(svc, "refund of a fully refunded payment", "POST", "/refunds",
             {"payment_id": p1["id"], "amount_minor": 1, "reason": "fraud"},
             422, "refund_exceeds_captured")
    c = svc.counts()
    check.eq("books consistent", (c["over_refunded"], c["refund_sums_wrong"]), (0, 0))

    # JPY has no minor unit: amounts are whole yen, still integers.
    inv_jpy = invoice(svc, 5000, "JPY")
    check.eq("JPY invoice", inv_jpy["currency"], "JPY")


def test_bad_input(svc):
    inv = invoice(svc, 500)
    good_inv = {"customer_id": 1, "amount_minor": 100, "currency": "EUR"}
    bad_invoices = [
        ("malformed JSON", '{"customer_id": 1,', "malformed_json"),
        ("empty body", "", "malformed_json"),
        ("duplicate key", '{"customer_id":1,"customer_id":2,"amount_minor":1,"currency":"EUR"}',
         "malformed_json"),
        ("JSON array", "[1,2]", "not_an_object"),
        ("missing customer_id", {"amount_minor": 100, "currency": "EUR"}, "missing_field"),
        ("missing amount", {"customer_id": 1, "currency": "EUR"}, "missing_field"),
        ("missing currency", {"customer_id": 1, "amount_minor": 100}, "missing_field"),
        ("null amount", dict(good_inv, amount_minor=None), "missing_field"),
        ("negative amount", dict(good_inv, amount_minor=-100), "invalid_amount"),
        ("zero amount", dict(good_inv, amount_minor=0), "invalid_amount"),
        ("fractional amount", dict(good_inv, amount_minor=10.5), "invalid_amount"),
        ("amount as string", dict(good_inv, amount_minor="100"), "invalid_amount"),
        ("amount beyond int64", '{"customer_id":1,"amount_minor":99999999999999999999999,'
         '"currency":"EUR"}', "number_out_of_range"),
        ("amount above the maximum", dict(good_inv, amount_minor=10**13 + 1),
         "amount_out_of_range"),
        ("unknown currency", dict(good_inv, currency="ZZZ"), "unknown_currency"),
        ("lower-case currency", dict(good_inv, currency="eur"), "unknown_currency"),
        ("string with a NUL", '{"customer_id":1,"amount_minor":1,"currency":"EU\\u0000"}',
         "malformed_json"),
        ("testing currency XTS", dict(good_inv, currency="XTS"), "unknown_currency"),
        ("currency as number", dict(good_inv, currency=978), "invalid_field"),
        ("zero customer", dict(good_inv, customer_id=0), "invalid_field"),
        ("negative customer", dict(good_inv, customer_id=-3), "invalid_field"),
    ]
    for what, body, code in bad_invoices:
        rejected(svc, f"invoice: {what}", "POST", "/invoices", body, 400, code)

    good_pay = {"invoice_id": inv["id"], "amount_minor": 100, "currency": "EUR",
                "gateway": "stripe-sim"}
    rejected(svc, "payment: unknown invoice", "POST", "/payments/authorize",
             dict(good_pay, invoice_id=10**12), 404, "invoice_not_found")
    rejected(svc, "payment: unknown gateway", "POST", "/payments/authorize",
             dict(good_pay, gateway="paypal"), 400, "unknown_gateway")
    rejected(svc, "payment: missing gateway", "POST", "/payments/authorize",
             {k: v for k, v in good_pay.items() if k != "gateway"}, 400, "missing_field")
    rejected(svc, "payment: negative amount", "POST", "/payments/authorize",
             dict(good_pay, amount_minor=-1), 400, "invalid_amount")
    rejected(svc, "payment: malformed JSON", "POST", "/payments/authorize", "{", 400,
             "malformed_json")

    rejected(svc, "refund: unknown payment", "POST", "/refunds",
             {"payment_id": 10**12, "amount_minor": 1, "reason": "fraud"}, 404,
             "payment_not_found")
    rejected(svc, "refund: bad reason", "POST", "/refunds",
             {"payment_id": 1, "amount_minor": 1, "reason": "because"}, 400, "invalid_reason")
    rejected(svc, "refund: missing amount", "POST", "/refunds",
             {"payment_id": 1, "reason": "fraud"}, 400, "missing_field")

    rejected(svc, "read: id not a number", "GET", "/invoices/abc", None, 400, "invalid_id")
    rejected(svc, "read: id zero", "GET", "/invoices/0", None, 400, "invalid_id")
    rejected(svc, "read: id beyond int64", "GET", "/invoices/99999999999999999999", None, 400,
             "invalid_id")
    rejected(svc, "read: unknown id", "GET", "/invoices/123456789", None, 404,
             "invoice_not_found")

    big = '{"customer_id":1,"note":"' + "x" * 20000 + '"}'
    rejected(svc, "oversized body", "POST", "/invoices", big, 413, "body_too_large")
    rejected(svc, "oversized chunked body", "POST", "/invoices",
             iter([big[:10000].encode(), big[10000:].encode()]), 413, "body_too_large",
             headers={"Transfer-Encoding": "chunked"})

    for method, path, allow in [("GET", "/invoices", "POST"), ("DELETE", "/invoices", "POST"),
                                ("GET", "/refunds", "POST"), ("PUT", "/payments/authorize",
                                                              "POST"),
                                ("POST", "/healthz", "GET"), ("POST", "/invoices/1", "GET")]:
        hdrs = rejected(svc, f"{method} {path}", method, path, None, 405, "method_not_allowed")
        check.eq(f"{method} {path}: Allow", hdrs.get("Allow"), allow)
    rejected(svc, "unknown path", "GET", "/nope", None, 404, "not_found")
    rejected(svc, "unknown path POST", "POST", "/payments", {"x": 1}, 404, "not_found")

    status, doc, _ = svc.request("GET", "/healthz")
    check.eq("still serving after bad input", status, 200)


def test_declines():
    svc = Billingd(billingd_exe, "--decline-rate", "1", "--gateway-latency-ms", "0")
    try:
        inv = invoice(svc, 700)
        status, p, _ = pay(svc, inv["id"], 700)
        check.eq("declined payment", (status, p["status"]), (201, "declined"))
        check.true("decline code set", p["decline_code"] != 0 and p["decline_reason"])
        status, doc, _ = svc.request("GET", f"/invoices/{inv['id']}")
        check.eq("invoice still open", (doc["paid_minor"], doc["status"]), (0, "open"))
        rejected(svc, "refund of a declined payment", "POST", "/refunds",
                 {"payment_id": p["id"], "amount_minor": 1, "reason": "fraud"}, 409,
                 "payment_not_captured")
        check.eq("declined row", svc.counts()["declined"], 1)
    finally:
        rc, out = svc.stop()
        check.eq("decline instance stops cleanly", rc, 0)
        if rc != 0:
            print("billingd's output:\n" + out[-2000:])
        svc.cleanup()


def test_locked_database(svc):
    """A writer holding SQLite's lock: billingd waits, retries, and either
    succeeds once it is released or answers 503 -- never loses a write."""
    body = {"customer_id": 5, "amount_minor": 321, "currency": "CHF"}
    locker = sqlite3.connect(svc.db, isolation_level=None, timeout=5,
                             check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")
    before = svc.counts()
    t0 = time.monotonic()
    status, doc, _ = svc.request("POST", "/invoices", body)
    check.eq("locked database: 503", (status, (doc or {}).get("error", {}).get("code")),
             (503, "database_busy"))
    check.true("locked database: waited before giving up", time.monotonic() - t0 > 1.0)
    locker.execute("ROLLBACK")
    check.eq("locked database: nothing written", svc.counts(), before)

    locker.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, lambda: locker.execute("ROLLBACK")).start()
    status, doc, _ = svc.request("POST", "/invoices", body)
    check.eq("lock released meanwhile: created", status, 201)
    check.eq("lock released meanwhile: one row", svc.counts()["invoices"],
             before["invoices"] + 1)
    time.sleep(0.1)
    locker.close()


def test_shutdown_in_flight():
    """SIGINT while payments are in flight (their headers in; then their
    bodies, and a 1 s gateway): they all finish and are stored, then the
    database is checkpointed and closed whole."""
    import os
    import signal
    svc = Billingd(billingd_exe, "--gateway-latency-ms", "1000", "--gateway-latency-dist",
                   "fixed", "--decline-rate", "0")
    try:
        invoices = [invoice(svc, 900 + i) for i in range(4)]
        pending = [PendingRequest(svc.port, "/payments/authorize", {
            "invoice_id": inv["id"], "amount_minor": inv["amount_minor"], "currency": "EUR",
            "gateway": "stripe-sim"}) for inv in invoices]
        svc.proc.send_signal(signal.SIGINT)
        results = []
        threads = [threading.Thread(target=lambda p=p: results.append(p.finish()[0]))
                   for p in pending]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        rc = svc.proc.wait(timeout=20)
        out = svc.output()
        check.eq("in-flight payments all answered 201", sorted(results), [201] * 4)
        check.eq("SIGINT: exit code", rc, 0)
        check.true("SIGINT: stopped cleanly", "SIGINT received" in out and
                   "stopped cleanly" in out, out)
        check.eq("in-flight payments all stored", svc.counts()["approved"], 4)
        check.true("WAL folded into the database file",
                   not os.path.exists(svc.db + "-wal") or os.path.getsize(svc.db + "-wal") == 0)
        conn = sqlite3.connect(svc.db)
        check.eq("integrity check", conn.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        conn.close()
    finally:
        svc.cleanup()


def check_help(name, exe):
    """--help: the usage on stdout, exit 0; each option's help, and each
    further line of it, starts in one column."""
    p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10)
    lines = p.stdout.splitlines()
    check.true(f"{name} --help: exit 0, the usage on stdout alone",
               p.returncode == 0 and p.stderr == "" and lines[:1] == [f"usage: {name} [options]"],
               f"({p.returncode}, {p.stdout!r}, {p.stderr!r})")
    starts, continued = set(), 0
    for line in lines[1:]:
        option = re.match(r"  (-[a-z], )?--[a-z-]+( [A-Z]+)? +\S", line)
        more = re.match(r" +\S", line)
        starts.add(option.end() - 1 if option else more.end() - 1 if more else None)
        continued += option is None and more is not None
    check.true(f"{name} --help: every help line starts in one column, --help last",
               len(starts) == 1 and None not in starts and lines[-1].startswith("  -h, --help ")
               and lines[-1].endswith(" this text"), p.stdout)
    return continued


def test_command_lines():
    check.true("billingd --help: a two-line help continues in its column",
               check_help("billingd", billingd_exe) > 0)
    check_help("billing-load", load_exe)
    for args in (["--port", "70000"], ["--port", "12x"], ["--decline-rate", "2"],
                 ["--threads", "0"], ["--gateway-latency-dist", "normal"], ["--bogus"],
                 ["extra"], ["--db", ""], ["--max-connections", "8"],
                 ["--max-connections", "99999999"], ["--request-timeout", "0"],
                 ["--request-timeout", "5s"], ["--seed", "1", "--seed", "2", "--port", "70000"], ["--seed"]):
        p = subprocess.run([billingd_exe, *args], capture_output=True, text=True, timeout=10)
        lines = p.stderr.strip().splitlines()
        check.true(f"billingd {' '.join(args)}: exit 2 and one line naming {args[0]}",
                   p.returncode == 2 and len(lines) == 1 and args[0] in lines[0], f"({p.returncode}, {p.stderr!r})")
    for args in (["--concurrency", "0"], ["--rate", "-1"], ["--duration", "x"],
                 ["--url", "ftp://x"], ["--nope"], ["--json", "--json", "--rate", "-1"], ["--rate"]):
        p = subprocess.run([load_exe, *args], capture_output=True, text=True, timeout=10)
        lines = p.stderr.strip().splitlines()
        check.true(f"billing-load {' '.join(args)}: exit 2 and one line naming {args[0]}",
                   p.returncode == 2 and len(lines) == 1 and args[0] in lines[0], f"({p.returncode}, {p.stderr!r})")
    p = subprocess.run([load_exe, "--url", "http://127.0.0.1:1", "--duration", "0.3",
                        "--concurrency", "1"], capture_output=True, text=True, timeout=30)
    check.true("billing-load against nothing: non-zero exit, says why",
               p.returncode == 1 and "no response" in p.stderr, f"({p.returncode}, {p.stderr!r})")


svc = Billingd(billingd_exe, "--decline-rate", "0", "--gateway-latency-ms", "0")
try:
    test_endpoints(svc)
    test_bad_input(svc)
    test_locked_database(svc)
finally:
    rc, out = svc.stop()
    check.eq("SIGTERM: exit code", rc, 0)
    check.true("SIGTERM: stopped cleanly", "stopped cleanly" in out, out)
    svc.cleanup()
test_declines()
test_shutdown_in_flight()
test_command_lines()
check.finish()

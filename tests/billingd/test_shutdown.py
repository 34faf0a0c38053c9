#!/usr/bin/env python3
"""billingd's shutdown: SIGTERM while every worker is busy stops it cleanly,
and a request in flight is finished while a new connection is closed at once.

- Under billing-load, SIGTERM, ROUNDS times: exit 0, "stopped cleanly".
  billingd runs with SLOW_LISTEN_REMOVAL preloaded (slow_listen_removal.c):
  the main thread's removal of the listening socket from an epoll set waits
  20 ms.  A shutdown that has the main thread do that while the workers may
  do it too (MHD_quiesce_daemon() on libmicrohttpd 0.9.75's epoll thread
  pool) then meets the race that aborts the process ("Fatal error in GNU
  libmicrohttpd daemon.c:5531: Failed to remove listen FD from epoll set",
  SIGABRT), which a loaded machine meets about once in a hundred stops.
- A payment whose headers are in and whose body is not (PendingRequest),
  then SIGTERM: once billingd says it is finishing
  in-flight requests, a new connection is closed unanswered at once; the
  rest of the body is then answered 201 with "Connection: close", and the
  payment is in the books.

usage: test_shutdown.py BILLINGD BILLING_LOAD SLOW_LISTEN_REMOVAL [ROUNDS]
"""
import signal
import socket
import sys

from billingdtest import Billingd, Checker, PendingRequest, bt, preloaded, read_until_closed, start_load

billingd_exe, load_exe, shim = sys.argv[1:4]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
check = Checker()


def stop_under_load(env):
    svc = Billingd(billingd_exe, "--gateway-latency-ms", "0", "--threads", "8", env=env)
    load = start_load(load_exe, svc.url, "--duration", "60", "--concurrency", "16")
    try:
        # Every worker busy: billing-load's connections are being served.
        bt.wait_for("billing-load's first 50 invoices in the books",
                    lambda: svc.counts()["invoices"] >= 50, timeout=60, interval=0.02)
        rc, out = svc.stop()
    finally:
        bt.kill_all(load)
        load.communicate()
        svc.cleanup()
    return rc, out


for i in range(rounds):
    rc, out = stop_under_load(preloaded(billingd_exe, shim))
    clean = rc == 0 and "stopped cleanly" in out
    check.true(f"round {i + 1}: SIGTERM under load, exit 0 and stopped cleanly (exit {rc})", clean,
               "" if clean else "\nbillingd's output:\n" + out[-2000:])


svc = Billingd(billingd_exe, "--gateway-latency-ms", "0", "--decline-rate", "0")
try:
    status, inv, _ = svc.request("POST", "/invoices", {"customer_id": 3, "amount_minor": 500,
                                                       "currency": "EUR"})
    check.eq("invoice created", status, 201)
    payment = PendingRequest(svc.port, "/payments/authorize", {
        "invoice_id": inv["id"], "amount_minor": 500, "currency": "EUR", "gateway": "stripe-sim"})
    svc.proc.send_signal(signal.SIGTERM)
    bt.wait_for("billingd to say it finishes in-flight requests",
                lambda: "finishing in-flight requests" in svc.output(), timeout=30, interval=0.02)
    late = socket.create_connection(("127.0.0.1", svc.port), timeout=5)
    late.sendall(b"GET /healthz HTTP/1.1\r\nHost: billingd\r\n\r\n")
    reply = read_until_closed(late)
    late.close()
    check.eq("a new connection while draining: closed unanswered at once", reply, b"")
    status, head = payment.finish()
    check.eq("the request in flight is answered 201", status, 201)
    check.true("... asking the client to close", "connection: close" in head, head)
    rc = svc.proc.wait(timeout=30)
    out = svc.output()
    check.eq("exit code", rc, 0)
    check.true("stopped cleanly", "stopped cleanly" in out, out)
    check.eq("the payment is in the books", svc.counts()["approved"], 1)
finally:
    svc.cleanup()
check.finish()

#!/usr/bin/env python3
"""billingd does not carry out a request that comes in as its request
deadline shuts the connection down: the client hears nothing, and an HTTP
client that sends it again on a fresh connection (libcurl does, for a POST
too) must not have it carried out twice.

billingd runs with --request-timeout 1 and SLOW_REAPER preloaded
(slow_reaper.c): the reaper's shutdown of a connection writes its
descriptor to a file, then waits 500 ms.  The test keeps a connection idle
past the deadline, waits for that line, and sends a whole invoice on the
connection in those 500 ms.  Then:
  - it gets no reply (the connection closes);
  - the invoice is not in the books;
  - the same invoice sent on a fresh connection is answered 201 and is the
    only one in the books.

usage: test_unheard.py BILLINGD SLOW_REAPER
"""
import json
import os
import socket
import sys
import tempfile

from billingdtest import Billingd, Checker, bt, preloaded, read_until_closed

billingd_exe, shim = sys.argv[1:3]
check = Checker()
body = json.dumps({"customer_id": 7, "amount_minor": 4200, "currency": "EUR"}).encode()
invoice = (b"POST /invoices HTTP/1.1\r\nHost: billingd\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

shut_log = os.path.join(tempfile.mkdtemp(prefix="billingd-unheard-"), "shutdowns")
env = preloaded(billingd_exe, shim)
env["BILLINGD_TEST_SHUTDOWN_LOG"] = shut_log
svc = Billingd(billingd_exe, "--request-timeout", "1", "--gateway-latency-ms", "0", env=env)
try:
    conn = socket.create_connection(("127.0.0.1", svc.port), timeout=10)
    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: billingd\r\n\r\n")
    first = conn.recv(65536)
    check.true("a first request on the connection is answered", first.startswith(b"HTTP/1.1 200"), repr(first))
    bt.wait_for("the request deadline to shut the idle connection down",
                lambda: os.path.exists(shut_log) and os.path.getsize(shut_log) > 0, timeout=10, interval=0.005)
    conn.sendall(invoice)
    reply = read_until_closed(conn)
    conn.close()
    check.eq("the invoice sent as the connection is shut down: no reply", reply, b"")
    check.eq("... and not carried out", svc.counts()["invoices"], 0)
    status, doc, _ = svc.request("POST", "/invoices", json.loads(body))
    check.eq("sent again on a fresh connection: 201", status, 201)
    check.eq("one invoice in the books", svc.counts()["invoices"], 1)
finally:
    svc.cleanup()
check.finish()

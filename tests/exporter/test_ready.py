#!/usr/bin/env python3
"""Ready means counting: a workload started the instant /healthz first
answers is counted exactly, with --pid and with --binary, ten rounds each.

The poller here is what a start-up script or a Kubernetes readiness probe
does: connect to /healthz as fast as it can, and start the work on the
first 200.  The workload fires at once without waiting for a semaphore
(fire_program go/now), so a fire made before the exporter is attached is
missing from its totals.  The program is the test's own copy
(billingtest.private_copy): --binary attaches to its file, which no other
test's process runs, so the test runs beside others."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe = h.env_path("BX_EXPORTER")
own = tempfile.mkdtemp(prefix="bx-ready-")
fire = bt.private_copy(h.env_path("BX_FIRE_STATIC"), own)
ROUNDS, THREADS, EACH = 10, 2, 20000


def healthz_ok(port):
    """One GET /healthz; True on a 200, False while nothing listens."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
            status_line = s.recv(64).split(b"\r\n", 1)[0]
            return status_line.split(b" ")[1:2] == [b"200"]
    except (ConnectionRefusedError, ConnectionResetError):
        return False


def start_exporter(*target):
    """The exporter on a free port, and that port once /healthz says 200."""
    port = h.free_port()
    out = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([exe, *target, "--listen", "127.0.0.1:%d" % port],
                            stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not healthz_ok(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            out.seek(0)
            raise RuntimeError("billing-exporter never ready (%s):\n%s" % (proc.returncode, out.read()))
        time.sleep(0.001)
    return proc, port


def counted(port):
    _, _, body = h.http_get("http://127.0.0.1:%d/metrics" % port)
    s = h.parse_exposition(body.decode())
    return (h.total(s, "billing_requests_total", handler="threads.same"),
            h.total(s, "billing_payments_total", gateway="threads-gw"),
            h.total(s, "billing_exporter_dropped_fires_total"))


def one_round(mode):
    """(fired, counted) for one round: --pid with 'go', --binary with 'now'."""
    prog, ex = None, None
    try:
        if mode == "pid":
            prog = h.FireProgram(fire, "go", str(THREADS), str(EACH))
            ex, port = start_exporter("--pid", str(prog.pid))
            prog.proc.stdin.write("go\n")
            prog.proc.stdin.flush()
        else:
            ex, port = start_exporter("--binary", fire)
            prog = h.FireProgram(fire, "now", str(THREADS), str(EACH))
        fired = prog.fired()
        return fired, counted(port)
    finally:
        if prog:
            prog.release()
        if ex:
            bt.stop_process(ex)


try:
    for mode in ("pid", "binary"):
        for r in range(1, ROUNDS + 1):
            fired, (requests, payments, dropped) = one_round(mode)
            want = THREADS * EACH
            bt.check(fired["request_done"] == want and fired["payment_auth"] == want,
                     "--%s round %d: the program fired %d of each" % (mode, r, want))
            bt.check(requests == want and payments == want and dropped == 0,
                     "--%s round %d: started on the first 200 from /healthz, counted "
                     "request-done %d and payment-auth %d of %d (dropped %d)"
                     % (mode, r, requests, payments, want, dropped))
finally:
    shutil.rmtree(own, ignore_errors=True)
bt.finish()

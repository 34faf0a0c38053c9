#!/usr/bin/env python3
"""2,000 slow clients (issue 20, finding 4): the unprivileged local user
of billingtest.attacker() opens 2,000 connections to the exporter from ten
loopback addresses and sends one byte of a request every 3 s on each,
reconnecting whatever the server closes, for 20 s.  Meanwhile /healthz
and /metrics, asked by root from 127.0.0.1 every half second, must answer within 2 s each time, and every one of the
first 2,000 connections must be closed by the server within its request
deadline (--web-request-timeout 5, which the test passes to keep its run
short, plus the 3 s between bytes).  The gap between bytes stays below the
deadline, so a deadline counted from the last byte never fires and fails.

On the code before (a select() loop, 1,024 open files, a timeout counted
from the last byte) /healthz stopped answering.  The exporter's only
target is an empty --stats-dir; root is needed only to act as the attacker
(the prober is another local user: each is limited as one peer,
conn_limits.c).  The connections over the attacker's limit are
closed at once, the others by their deadline."""
import os
import resource
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

CLIENTS, ADDRESSES, SECONDS, GAP, DEADLINE = 2000, 10, 20, 3.0, 5
exe = h.env_path("BX_EXPORTER")

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < CLIENTS + 200:
    bt.skip("the open-files limit (%d) is too low for %d client sockets" % (hard, CLIENTS))
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

tmp = tempfile.mkdtemp(prefix="bx-slow-")
ex = h.Exporter(exe, *st.stats_only_args(tmp), "--web-request-timeout", str(DEADLINE))
ANSWER_S = 2.0  # /healthz and /metrics answer within it each time (docs/exporter.md)
health = {"asked": 0, "failed": 0, "worst": 0.0, "metrics_failed": 0}
stop = threading.Event()


def watch():
    while not stop.is_set():
        t0 = time.monotonic()
        ok = st.healthz(ex.port, timeout=ANSWER_S)
        took = time.monotonic() - t0
        status, _ = st.get("http://127.0.0.1:%d/metrics" % ex.port, timeout=ANSWER_S)
        health["asked"] += 1
        health["failed"] += 0 if ok and took <= ANSWER_S else 1
        health["metrics_failed"] += 0 if status == 200 else 1
        health["worst"] = max(health["worst"], took)
        stop.wait(0.5)


sources = ["127.0.0.%d" % (2 + i) for i in range(ADDRESSES)]
attacker = st.AsAttacker(st.slow_clients, ex.port, CLIENTS, sources, SECONDS, GAP)  # before any thread
watcher = threading.Thread(target=watch)
try:
    held = attacker.wait("the slow connections", lambda m: "held" in m, 90)
    bt.check(held["refused"] == 0, "all %d slow connections were made (%d refused)" % (CLIENTS, held["refused"]))
    watcher.start()
    done = attacker.wait("the end of the slow clients", lambda m: "done" in m, SECONDS + 60)
    stop.set()
    watcher.join()

    bt.check(health["asked"] >= SECONDS, "/healthz was asked %d times while %d slow clients were connected"
             % (health["asked"], CLIENTS))
    bt.check(health["failed"] == 0, "/healthz answered 200 within %g s every time (%d of %d failed; slowest %.2f s)"
             % (ANSWER_S, health["failed"], health["asked"], health["worst"]))
    bt.check(health["metrics_failed"] == 0, "/metrics answered 200 every time (%d of %d failed)"
             % (health["metrics_failed"], health["asked"]))
    lasted = sorted(t for t in done["lifetimes"] if t is not None)
    late = len(done["lifetimes"]) - len([t for t in lasted if t <= DEADLINE + GAP + 2])
    bt.check(late == 0, "each of the first %d slow connections was closed by the server within %d s of opening "
             "(%d were not; median %.1f s, longest %.1f s)" % (CLIENTS, DEADLINE + GAP + 2, late,
                                                               lasted[len(lasted) // 2] if lasted else -1,
                                                               lasted[-1] if lasted else -1))
    bt.check(ex.proc.poll() is None, "the exporter is still running")
    print("slow clients: %d at once at most, /healthz asked %d times, slowest answer %.3f s"
          % (done["peak"], health["asked"], health["worst"]))
finally:
    stop.set()
    if watcher.is_alive():
        watcher.join()
    attacker.stop()
    rc, out = ex.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.check(rc == 0, "the exporter exits 0 on SIGTERM (rc=%s)" % rc)
bt.finish()

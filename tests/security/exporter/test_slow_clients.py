#!/usr/bin/env python3
"""2,000 slow clients (issue 20, finding 4): a network client opens 2,000
connections to the exporter from ten loopback addresses and sends one byte
of a request every 3 s on each, reconnecting whatever the server closes,
for 40 s.  Meanwhile /healthz and /metrics, asked from another address
every half second, must answer within 2 s each time, and every one of the
first 2,000 connections must be closed by the server within its request
deadline (the default --web-request-timeout, 10 s, plus the 3 s between bytes).

On the code before (a select() loop, 1,024 open files, a timeout counted
from the last byte) /healthz stopped answering.  Needs no root: the
exporter's only target is an empty --stats-dir."""
import os
import resource
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

CLIENTS, ADDRESSES, SECONDS, GAP, DEADLINE = 2000, 10, 40, 3.0, 10
exe = h.env_path("BX_EXPORTER")

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < CLIENTS + 200:
    bt.skip("the open-files limit (%d) is too low for %d client sockets" % (hard, CLIENTS))
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

tmp = tempfile.mkdtemp(prefix="bx-slow-")
ex = h.Exporter(exe, *st.stats_only_args(tmp))  # the default --web-request-timeout: DEADLINE
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: " + b"s" * 4096 + b"\r\n\r\n"


class Slow:
    """One slow client connection: its socket, when it opened, bytes sent."""

    def __init__(self, source, first_wave):
        self.sock = socket.socket()
        self.sock.settimeout(5)
        self.sock.bind((source, 0))
        self.opened = time.monotonic()
        self.sock.connect(("127.0.0.1", ex.port))
        self.sock.setblocking(False)
        self.sent = 0
        self.closed_at = None
        self.first_wave = first_wave

    def poke(self):
        """Send the next byte; False once the server has closed it."""
        try:
            if self.sock.recv(4096) == b"":
                return False  # EOF: closed by the server
        except BlockingIOError:
            pass
        except OSError:
            return False
        try:
            self.sock.send(REQUEST[self.sent % len(REQUEST):][:1])
            self.sent += 1
            return True
        except BlockingIOError:
            return True
        except OSError:
            return False


health = {"asked": 0, "failed": 0, "worst": 0.0, "metrics_failed": 0}
stop = threading.Event()


def watch():
    while not stop.is_set():
        t0 = time.monotonic()
        ok = st.healthz(ex.port, timeout=2.0)
        took = time.monotonic() - t0
        status, _ = st.get("http://127.0.0.1:%d/metrics" % ex.port, timeout=2.0)
        health["asked"] += 1
        health["failed"] += 0 if ok and took <= 2.0 else 1
        health["metrics_failed"] += 0 if status == 200 else 1
        health["worst"] = max(health["worst"], took)
        stop.wait(0.5)


clients, first, refused, peak = [], [], 0, 0
watcher = threading.Thread(target=watch)
try:
    t_start = time.monotonic()
    for i in range(CLIENTS):
        try:
            c = Slow("127.0.0.%d" % (2 + i % ADDRESSES), True)
            clients.append(c)
            first.append(c)
        except OSError:
            refused += 1
    bt.check(refused == 0, "the server accepted all %d slow connections (%d refused)" % (CLIENTS, refused))
    watcher.start()
    while time.monotonic() - t_start < SECONDS:
        t_round = time.monotonic()
        alive = []
        for c in clients:
            if c.poke():
                alive.append(c)
            else:
                c.closed_at = time.monotonic()
                c.sock.close()
        peak = max(peak, len(alive))
        # the attacker keeps its 2,000: each closed one is replaced
        for i in range(CLIENTS - len(alive)):
            try:
                alive.append(Slow("127.0.0.%d" % (2 + i % ADDRESSES), False))
            except OSError:
                pass
        clients = alive
        time.sleep(max(0.0, GAP - (time.monotonic() - t_round)))
    stop.set()
    watcher.join()

    bt.check(health["asked"] >= SECONDS, "/healthz was asked %d times while %d slow clients were connected"
               % (health["asked"], CLIENTS))
    bt.check(health["failed"] == 0, "/healthz answered 200 within 2 s every time (%d of %d failed; slowest %.2f s)"
               % (health["failed"], health["asked"], health["worst"]))
    bt.check(health["metrics_failed"] == 0, "/metrics answered 200 every time (%d of %d failed)"
               % (health["metrics_failed"], health["asked"]))
    late = [c for c in first if c.closed_at is None or c.closed_at - c.opened > DEADLINE + GAP + 2]
    lasted = sorted(c.closed_at - c.opened for c in first if c.closed_at is not None)
    bt.check(not late, "each of the first %d slow connections was closed by the server within %d s of opening "
               "(%d were not; median %.1f s)" % (len(first), DEADLINE + GAP + 2, len(late),
                                                 lasted[len(lasted) // 2] if lasted else -1))
    bt.check(ex.proc.poll() is None, "the exporter is still running")
    print("slow clients: %d at once at most, /healthz asked %d times, slowest answer %.3f s"
          % (peak, health["asked"], health["worst"]))
finally:
    stop.set()
    if watcher.is_alive():
        watcher.join()
    for c in clients:
        c.sock.close()
    rc, out = ex.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.check(rc == 0, "the exporter exits 0 on SIGTERM (rc=%s)" % rc)
bt.finish()

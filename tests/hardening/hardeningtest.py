"""Hostile clients on loopback, bounded in count and time, for billingd.

  SlowClients(port, n, seconds)  n connections that each send one byte of
      a never-ending request header per second (slowloris); a connection the
      server closes is opened again, as an attacker would.
  Burst(port, n)                 n connections opened at once and held
      silent until stop().
  HealthProbe(port, every)       GET /healthz from an honest client every
      `every` seconds: latencies, failures.
  peak_rss_kib(pid)              VmHWM of a process.

Everything goes to 127.0.0.1; every socket is closed by stop().
"""
import errno
import http.client
import resource
import selectors
import socket
import threading
import time

HEADER = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100000


def raise_fd_limit(need):
    """Soft RLIMIT_NOFILE up to the hard limit; False when `need` cannot fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, need)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= need


def _connect(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    err = s.connect_ex(("127.0.0.1", port))
    if err not in (0, errno.EINPROGRESS):
        s.close()
        return None
    return s


class SlowClients:
    """n slowloris connections, one byte each per second, for `seconds`."""

    def __init__(self, port, n, seconds):
        self.port, self.n, self.seconds = port, n, seconds
        self.opened = 0       # connections opened, reconnections included
        self.closed_by_server = 0
        self.bytes_sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        socks = {}  # socket -> bytes of HEADER sent
        end = time.monotonic() + self.seconds
        try:
            while not self._stop.is_set() and time.monotonic() < end:
                while len(socks) < self.n:
                    s = _connect(self.port)
                    if s is None:
                        break
                    socks[s] = 0
                    self.opened += 1
                tick = time.monotonic()
                for s in list(socks):
                    try:
                        sent = s.send(HEADER[socks[s]:socks[s] + 1])
                        socks[s] += sent
                        self.bytes_sent += sent
                        # A server that closed us shows as EOF on read.
                        s.setblocking(False)
                        if s.recv(4096, socket.MSG_PEEK) == b"":
                            raise ConnectionResetError
                    except BlockingIOError:
                        continue
                    except OSError:
                        self.closed_by_server += 1
                        s.close()
                        del socks[s]
                self._stop.wait(max(0.0, 1.0 - (time.monotonic() - tick)))
        finally:
            for s in socks:
                s.close()

    def stop(self):
        self._stop.set()
        self._thread.join()


class Burst:
    """n connections opened at once and held silent."""

    def __init__(self, port, n):
        self.socks = [s for s in (_connect(port) for _ in range(n)) if s is not None]
        self.opened = len(self.socks)

    def still_open(self):
        """How many the server has not closed yet."""
        sel = selectors.DefaultSelector()
        for s in self.socks:
            sel.register(s, selectors.EVENT_READ)
        closed = 0
        for key, _ in sel.select(timeout=0):
            try:
                if key.fileobj.recv(1, socket.MSG_PEEK) == b"":
                    closed += 1
            except OSError:
                closed += 1
        sel.close()
        return len(self.socks) - closed

    def stop(self):
        for s in self.socks:
            s.close()
        self.socks = []


class HealthProbe:
    """An honest client: GET /healthz every `every` s, new connection each time."""

    def __init__(self, port, every=0.2, timeout=5.0):
        self.port, self.every, self.timeout = port, every, timeout
        self.latencies = []   # seconds, answered 200
        self.failures = []    # (time since start, what went wrong)
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            t = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                conn.request("GET", "/healthz")
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    self.latencies.append(time.monotonic() - t)
                else:
                    self.failures.append((t - self._t0, "status %d" % resp.status))
            except (OSError, http.client.HTTPException) as e:
                self.failures.append((t - self._t0, "%s: %s" % (type(e).__name__, e)))
            finally:
                conn.close()
            self._stop.wait(max(0.0, self.every - (time.monotonic() - t)))

    def stop(self):
        self._stop.set()
        self._thread.join()

    def summary(self):
        lat = sorted(self.latencies)

        def pick(q):
            return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else None
        return {"answered": len(lat), "failed": len(self.failures),
                "p50_ms": pick(0.5), "p99_ms": pick(0.99),
                "max_ms": lat[-1] * 1000 if lat else None}


def rss_kib(pid, field="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def peak_rss_kib(pid):
    return rss_kib(pid, "VmHWM")

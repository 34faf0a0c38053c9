"""Shared helpers of the billingd tests: start and stop billingd, talk to it,
run billing-load, run bpftrace against it, read its database.

Every process a test starts is stopped in a finally block; all traffic goes
to 127.0.0.1.
"""
import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


class Billingd:
    """A billingd on an ephemeral port with its own database file."""

    def __init__(self, exe, *extra_args):
        self.dir = tempfile.mkdtemp(prefix="billingd-test-")
        self.db = os.path.join(self.dir, "billing.db")
        self.log = open(os.path.join(self.dir, "billingd.out"), "w+")
        self.proc = subprocess.Popen(
            [exe, "--port", "0", "--db", self.db, *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.port = self._wait_for_port()
        self.pid = self.proc.pid

    def _wait_for_port(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            self.log.seek(0)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", self.log.read())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"billingd exited early: {self.output()}")
            time.sleep(0.02)
        raise RuntimeError("billingd did not start listening within 10 s")

    def output(self):
        self.log.seek(0)
        return self.log.read()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or None, response headers) for one request."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            chunked = body is not None and not isinstance(body, (str, bytes))
            conn.request(method, path, body=body, headers=headers or {},
                         encode_chunked=chunked)
            resp = conn.getresponse()
            data = resp.read()
            try:
                doc = json.loads(data) if data else None
            except ValueError:
                doc = None
            return resp.status, doc, dict(resp.getheaders())
        finally:
            conn.close()

    def stop(self):
        """SIGTERM, then the exit code and billingd's output."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode, self.output()

    def cleanup(self):
        self.stop()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def counts(self):
        """Rows in the books, read with Python's own sqlite3 module."""
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            q = lambda sql: conn.execute(sql).fetchone()[0]
            return {
                "invoices": q("SELECT count(*) FROM invoices"),
                "approved": q("SELECT count(*) FROM payments WHERE status = 'approved'"),
                "declined": q("SELECT count(*) FROM payments WHERE status = 'declined'"),
                "refunds": q("SELECT count(*) FROM refunds"),
                "over_refunded": q("SELECT count(*) FROM payments"
                                   " WHERE refunded_minor > amount_minor"),
                "refund_sums_wrong": q(
                    "SELECT count(*) FROM payments p WHERE p.refunded_minor !="
                    " (SELECT coalesce(sum(amount_minor), 0) FROM refunds r"
                    "  WHERE r.payment_id = p.id)"),
            }
        finally:
            conn.close()


def run_load(exe, url, *args, timeout=120):
    """Runs billing-load --json; returns (exit code, summary dict, stderr)."""
    p = subprocess.run([exe, "--url", url, "--json", *args], capture_output=True, text=True,
                       timeout=timeout)
    summary = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
    return p.returncode, summary, p.stderr


def start_load(exe, url, *args):
    return subprocess.Popen([exe, "--url", url, "--json", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def bpftrace_usable():
    """None when bpftrace can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "needs root for bpftrace"
    if shutil.which("bpftrace") is None:
        return "bpftrace is not installed"
    if not os.path.ismount("/sys/kernel/tracing"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
                       capture_output=True)
        if not os.path.ismount("/sys/kernel/tracing"):
            return "tracefs is not mounted and cannot be"
    return None


class Bpftrace:
    """bpftrace -p PID running a program whose BEGIN prints READY: BEGIN
    fires once every probe is attached, so READY means tracing is on."""

    def __init__(self, program_path, pid, ready_timeout=60):
        self.out = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(["bpftrace", program_path, "-p", str(pid)],
                                     stdout=self.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + ready_timeout
        while True:
            text = self.output()
            if "READY" in text:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"bpftrace exited before attaching:\n{text}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"bpftrace did not attach within {ready_timeout} s:\n{text}")
            time.sleep(0.05)

    def output(self):
        self.out.seek(0)
        return self.out.read()

    def stop(self, timeout=30):
        """SIGINT (as Ctrl-C), then (exit code, output)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode, self.output()


MAP_LINE = re.compile(r"^@(\w+)(?:\[(.*)\])?: (-?\d+)$")


def parse_maps(text):
    """bpftrace's exit print of its maps -> {(name, key or None): value}."""
    maps = {}
    for line in text.splitlines():
        m = MAP_LINE.match(line.strip())
        if m:
            key = m.group(2)
            maps[(m.group(1), key.strip() if key is not None else None)] = int(m.group(3))
    return maps


class Checker:
    """Collects failed expectations so a test reports all of them."""

    def __init__(self):
        self.failures = 0
        self.passed = 0

    def eq(self, what, got, want):
        if got == want:
            self.passed += 1
            print(f"ok   {what}: {got}")
        else:
            self.failures += 1
            print(f"FAIL {what}: got {got!r}, want {want!r}")

    def true(self, what, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failures += 1
            print(f"FAIL {what} {detail}")

    def finish(self):
        print(f"{self.passed} passed, {self.failures} failed")
        sys.exit(1 if self.failures else 0)

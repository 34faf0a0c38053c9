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
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

skip = bt.skip


class Billingd:
    """A billingd on an ephemeral port with its own database file."""

    def __init__(self, exe, *extra_args, env=None):
        self.dir = tempfile.mkdtemp(prefix="billingd-test-")
        self.db = os.path.join(self.dir, "billing.db")
        self.log = open(os.path.join(self.dir, "billingd.out"), "w+")
        self.proc = subprocess.Popen(
            [exe, "--port", "0", "--db", self.db, *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.port = self._wait_for_port()
        self.pid = self.proc.pid

    def _wait_for_port(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", bt.written(self.log))
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"billingd exited early: {self.output()}")
            time.sleep(0.02)
        raise RuntimeError("billingd did not start listening within 10 s")

    def output(self):
        return bt.written(self.log)

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
        return bt.stop_process(self.proc, timeout=20), self.output()

    def cleanup(self):
        self.stop()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def counts(self):
        """Rows in the books, read with Python's own sqlite3 module."""
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            def q(sql):
                return conn.execute(sql).fetchone()[0]
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


class PendingRequest:
    """A POST whose headers billingd has taken in and whose body it has
    not: it counts as in flight.  "Expect: 100-continue" makes billingd say
    when the headers are in ("100 Continue"), so no sleep guesses it."""

    def __init__(self, port, path, body):
        self.body = json.dumps(body).encode()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(b"POST %s HTTP/1.1\r\nHost: billingd\r\nContent-Type: application/json\r\n"
                          b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n"
                          % (path.encode(), len(self.body)))
        self.interim = self.sock.recv(4096)
        if not self.interim.startswith(b"HTTP/1.1 100"):
            self.sock.close()
            raise RuntimeError("billingd did not answer 100 Continue: %r" % self.interim)

    def finish(self):
        """Sends the body and reads the reply until billingd closes the
        connection (as it does while draining); (status, the reply's head
        in lower case)."""
        self.sock.sendall(self.body)
        reply = read_until_closed(self.sock) or b""
        self.sock.close()
        head = reply.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
        m = re.match(r"http/1\.1 (\d+)", head)
        return (int(m.group(1)) if m else None), head


def preloaded(exe, library):
    """The environment that preloads library into exe: after the sanitizer
    runtimes exe links, if any (ASan wants its own first)."""
    env = dict(os.environ)
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=30).stdout
    runtimes = re.findall(r"^\s*lib(?:asan|ubsan|tsan)\.so\S*\s+=>\s+(\S+)", ldd, re.M)
    env["LD_PRELOAD"] = " ".join(runtimes + [os.path.abspath(library)])
    return env


def read_until_closed(sock):
    """Everything the peer sends until it closes; None when it neither
    answers nor closes within the socket's timeout."""
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except ConnectionResetError:
        return data
    except socket.timeout:
        return None


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
    return bt.why_no_tracing("bpftrace")


class Bpftrace:
    """bpftrace -p PID running a program whose BEGIN prints READY: BEGIN
    fires once every probe is attached, so READY means tracing is on."""

    def __init__(self, program_path, pid, ready_timeout=60):
        self.out = tempfile.TemporaryFile(mode="w+")
        # pid None: no -p, for a program whose probes name their binary.
        self.proc = subprocess.Popen(["bpftrace", program_path]
                                     + (["-p", str(pid)] if pid is not None else []),
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
        return bt.written(self.out)

    def stop(self, timeout=120):
        """SIGINT (as Ctrl-C; re-sent if bpftrace 0.17 missed it), then
        (exit code, output)."""
        t0 = time.monotonic()
        bt.interrupt_bpftrace(self.proc, timeout)
        if time.monotonic() - t0 > 5:
            print("bpftrace took %.1f s to exit after SIGINT (rc %s)"
                  % (time.monotonic() - t0, self.proc.returncode))
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


def check_books(check, trace_out, rows, load, other_2xx=0):
    """What ground_truth.bt counted == the database rows == what billing-load saw.

    other_2xx: requests answered 200 that billing-load did not send (an honest
    /healthz client beside it): they fire request-start/done and nothing else."""
    maps = parse_maps(trace_out)

    def get(name, key=None):
        return maps.get((name, key), 0)

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

    # Requests: one request-start and one request-done per response, and per
    # request billingd did not carry out because its request deadline shut
    # the connection down as the request came in (status 444, no reply: an
    # HTTP client sends it again on a fresh connection).
    unheard = get("request_done", "444")
    done_total = sum(v for (name, _), v in maps.items() if name == "request_done")
    check.eq("request-done probes == responses received + requests unheard (444: %d)" % unheard,
             done_total, load["responses"] + other_2xx + unheard)
    check.eq("request-start probes == responses received + requests unheard", get("request_start"),
             load["responses"] + other_2xx + unheard)
    ok_answers = (load["invoices_created"] + load["payments_approved"] + load["payments_declined"]
                  + load["refunds"] + load["invoice_reads"] + other_2xx)
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


class Checker(bt.Checks):
    """billingtest's checks, with the two shapes these tests use."""

    def eq(self, what, got, want):
        if got == want:
            return self.check(True, f"{what}: {got}")
        return self.check(False, f"{what}: got {got!r}, want {want!r}")

    def true(self, what, cond, detail=""):
        return self.check(cond, what if cond or not detail else f"{what} {detail}")

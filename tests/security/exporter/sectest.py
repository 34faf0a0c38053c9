"""Helpers of billing-exporter's security tests: the exporter harness of
tests/exporter, a test CA with a server and a client certificate made with
openssl, bcrypt hashes from libxcrypt, and HTTP(S) requests with or
without credentials.

Everything is made in a private temporary directory (mkdtemp, mode 0700)
removed by cleanup()."""
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "exporter"))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402


class Pki:
    """A CA, a server certificate for 127.0.0.1/localhost and a client
    certificate, all signed by the CA; a second CA whose client
    certificate the first does not trust."""

    def __init__(self):
        bt.require_program("openssl", "openssl")
        self.dir = tempfile.mkdtemp(prefix="bx-sec-")
        for ca in ("ca", "other-ca"):
            self._run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self.path(ca + ".key"), "-out", self.path(ca + ".crt"), "-days", "2",
                      "-subj", "/CN=billing-probes test " + ca)
        self._leaf("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        self._leaf("client", "ca", "extendedKeyUsage=clientAuth\n")
        self._leaf("stranger", "other-ca", "extendedKeyUsage=clientAuth\n")

    def path(self, name):
        return os.path.join(self.dir, name)

    def _run(self, *args):
        r = subprocess.run(["openssl", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError("openssl %s: %s" % (args[0], r.stdout))

    def _leaf(self, name, ca, ext):
        with open(self.path(name + ".ext"), "w") as f:
            f.write(ext)
        self._run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                  "-keyout", self.path(name + ".key"), "-out", self.path(name + ".csr"), "-subj", "/CN=" + name)
        self._run("x509", "-req", "-in", self.path(name + ".csr"), "-CA", self.path(ca + ".crt"),
                  "-CAkey", self.path(ca + ".key"), "-CAcreateserial", "-out", self.path(name + ".crt"),
                  "-days", "2", "-extfile", self.path(name + ".ext"))

    def web_config(self, text, name="web.yml"):
        """Write a web config into the directory; its path."""
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def get(url, user=None, password=None, cafile=None, cert=None, timeout=10):
    """(status, body) of one GET; status 0 with the error text when no
    HTTP answer came (refused, reset, TLS failure)."""
    import urllib.error
    import urllib.request
    headers = {}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    ctx = None
    if url.startswith("https:"):
        ctx = ssl.create_default_context(cafile=cafile)
        if cert:
            ctx.load_cert_chain(*cert)
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout,
                                    context=ctx) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (OSError, ssl.SSLError) as e:
        return 0, str(e)


def healthz(port, timeout=2.0, source="127.0.0.1"):
    """True when GET /healthz on 127.0.0.1:port answers 200 within timeout."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as s:
            s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
            return s.recv(64).split(b"\r\n", 1)[0].split(b" ")[1:2] == [b"200"]
    except OSError:
        return False


def stats_workload(tmpdir):
    """A copy of stats_workload (meson passes it as argv[1]) in TMPDIR that
    any user may run; None, after a failed check, without it."""
    if len(sys.argv) < 2:
        bt.check(False, "the stats part has stats_workload (meson test passes it)")
        return None
    workload = os.path.join(tmpdir, "stats-workload")
    shutil.copy(sys.argv[1], workload)
    os.chmod(workload, 0o755)
    return workload


def stats_only_args(tmpdir):
    """Arguments that give the exporter a target needing no BPF (an empty
    --stats-dir): for tests of its HTTP face alone."""
    d = os.path.join(tmpdir, "no-segments")
    os.makedirs(d, exist_ok=True)
    return ["--stats-dir", d]


def roll_out(fire, service, fires, procs):
    """The service's rollout: a copy of FIRE renamed over SERVICE (a new
    inode at PATH, started by root) firing FIRES requests; appended to
    PROCS.  "fired", or "not counted: WHY" when it never saw the exporter."""
    new = service + ".new"
    shutil.copy(fire, new)
    os.chmod(new, 0o755)
    os.rename(new, service)
    try:
        rolled = h.FireProgram(service, "threads", "1", str(fires))
        procs.append(rolled)
        rolled.fired(timeout=40)
        return "fired"
    except RuntimeError as e:
        return "not counted: " + str(e).strip().splitlines()[0][:200]


class AsAttacker:
    """fn(report, *args) run in a forked child as billingtest.attacker()'s
    user (its own uid and group, no other groups), with the test's limits
    (a raised open-files limit stays raised).  report(obj) sends obj as
    one JSON line to the test; wait(what, pred) takes the first one for
    which pred holds.  Fork before starting threads."""

    def __init__(self, fn, *args):
        uid, gid, _ = bt.attacker()
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 1
            try:
                os.close(r)
                # the codec getaddrinfo loads lazily, while the
                # interpreter's files are readable (they may be in root's home)
                "localhost".encode("idna")
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                out = os.fdopen(w, "w", buffering=1)
                fn(lambda obj: out.write(json.dumps(obj) + "\n"), *args)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(w)
        self.lines = bt.Lines(os.fdopen(r))

    def wait(self, what, pred, timeout=60):
        return json.loads(self.lines.wait_for(lambda line: pred(json.loads(line)), what, timeout))

    def stop(self):
        """Ends the child (SIGTERM: fn's process goes with all its sockets)."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = 0


IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)  # linux/in.h


class Slow:
    """One slow client connection to 127.0.0.1:port from source: one byte
    of a long request per poke()."""
    REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: " + b"s" * 4096 + b"\r\n\r\n"

    def __init__(self, port, source):
        self.sock = socket.socket()
        self.sock.settimeout(5)
        try:
            # the port chosen at connect(), for this connection only: a
            # port bind() picks is held from every other socket of the host
            # on that address, the port a neighbour test chose for its
            # server among them
            self.sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            self.sock.bind((source, 0))
            self.opened = time.monotonic()
            self.sock.connect(("127.0.0.1", port))
        except OSError:
            self.sock.close()
            raise
        self.sock.setblocking(False)
        self.sent = 0

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
            self.sock.send(self.REQUEST[self.sent % len(self.REQUEST):][:1])
            self.sent += 1
            return True
        except BlockingIOError:
            return True
        except OSError:
            return False


def slow_clients(report, port, count, sources, seconds, gap=3.0):
    """The slow-client attack: count connections from sources (in turn),
    one byte every gap seconds on each, each one the server closes opened
    again, for seconds.  Reports {"held": N, "refused": R} once the first
    count connections are made, and at the end {"done": True, "peak": P,
    "lifetimes": [...]}: how long each of the first count lasted before
    the server closed it (None: still open at the end)."""
    t_start = time.monotonic()
    first, clients, refused = [], [], 0
    for i in range(count):
        try:
            c = Slow(port, sources[i % len(sources)])
            first.append(c)
            clients.append(c)
        except OSError:
            refused += 1
    report({"held": len(clients), "refused": refused})
    closed, peak = {}, 0
    while time.monotonic() - t_start < seconds:
        t_round = time.monotonic()
        alive = []
        for c in clients:
            if c.poke():
                alive.append(c)
            else:
                closed[id(c)] = time.monotonic() - c.opened
                c.sock.close()
        peak = max(peak, len(alive))
        for i in range(count - len(alive)):
            try:
                alive.append(Slow(port, sources[i % len(sources)]))
            except OSError:
                pass
        clients = alive
        time.sleep(max(0.0, gap - (time.monotonic() - t_round)))
    report({"done": True, "peak": peak, "lifetimes": [closed.get(id(c)) for c in first]})
    for c in clients:
        c.sock.close()


def free_port():
    """A loopback port free now, for a server started later."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_documented(names):
    """docs/security.md states each #define NAME of the exporter's headers
    as `NAME VALUE`, with the header's value, a number or a string (one
    source: the code)."""
    import glob
    import re
    root = os.path.join(HERE, "..", "..", "..")
    exporter = os.path.join(root, "tools", "billing-exporter", "**", "*.[ch]")
    headers = "".join(open(p).read() for p in glob.glob(exporter, recursive=True))
    with open(os.path.join(root, "docs", "security.md")) as f:
        doc = f.read()
    for name in names:
        m = re.search(r'(?m)^#define %s (\d+|"[^"\n]*")(?=\s|$)' % name, headers)
        bt.check(m and ("`%s %s`" % (name, m.group(1))) in doc,
                 "docs/security.md states %s as in the code (%s)" % (name, m.group(1) if m else "not defined"))

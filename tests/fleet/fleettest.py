"""Hosts of a fleet on one machine: network namespaces joined by a bridge,
processes started in them, HTTP(S) from this process into them; the
recipe's command lines as its files write them, the certificates and
password hashes its web configs name, and a remote write made by hand.

Every name carries this run's PID (bridge "bflPID", namespaces
"bflPID-NAME", veths "bflPIDvN"), so two runs never meet.  The addresses
(SUBNET) live only inside this run's namespaces: the root namespace gets
none, so they cannot collide with the machine's networks or another run's.
Net.cleanup() stops every process and removes every namespace, veth and
the bridge; callers run it in a finally block.
"""
import base64
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import struct
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

SUBNET = "10.77.0."
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def in_netns(ns, fn):
    """fn()'s value, called on a thread that entered namespace ns: sockets
    it opens (a connection, a listening server) belong to ns for good."""
    out = {}

    def run():
        try:
            fd = os.open("/run/netns/" + ns, os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns " + ns)
            finally:
                os.close(fd)
            out["value"] = fn()
        except BaseException as e:  # handed to the caller's thread
            out["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


class Client:
    """How a request is made: the CA its TLS trusts (None: any
    certificate, as an intruder who does not care), and basic auth."""

    def __init__(self, ca=None, user=None, password=None):
        self.ca, self.user, self.password = ca, user, password

    def context(self, url):
        if not url.startswith("https:"):
            return None
        if self.ca:
            return ssl.create_default_context(cafile=self.ca)
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def headers(self):
        if self.user is None:
            return {}
        return {"Authorization": "Basic " + base64.b64encode(
            ("%s:%s" % (self.user, self.password)).encode()).decode()}


NOBODY = Client()


def request(ns, url, client=NOBODY, data=None, headers=None, method=None, timeout=10):
    """(status, body bytes) of a request from inside ns; an HTTP error is
    its status, not an exception (a connection that fails raises)."""
    def send():
        req = urllib.request.Request(url, data=data, headers=dict(client.headers(), **(headers or {})),
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=client.context(url)) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
    return in_netns(ns, send)


def http_get(ns, url, timeout=10, client=NOBODY):
    """(status, body bytes) of a GET from inside ns; raises on an HTTP error."""
    status, body = request(ns, url, client, timeout=timeout)
    if status >= 400:
        raise urllib.error.HTTPError(url, status, body.decode(errors="replace")[:200], None, None)
    return status, body


def answers(ns, url, client=NOBODY):
    """Does url answer 200 from inside ns (False while it cannot connect)?"""
    try:
        return request(ns, url, client, timeout=3)[0] == 200
    except (OSError, urllib.error.URLError):
        return False


class Pki:
    """Certificates made with openssl in DIR: CAs, and leaves each CA signs
    for the names and addresses given."""

    def __init__(self, directory):
        self.dir = directory

    def path(self, name):
        return os.path.join(self.dir, name)

    def _openssl(self, *args):
        r = subprocess.run(["openssl", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError("openssl %s: %s" % (args[0], r.stdout))

    def ca(self, name):
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self.path(name + ".key"), "-out", self.path(name + ".crt"), "-days", "2",
                      "-subj", "/CN=billing-probes fleet test " + name)
        return self.path(name + ".crt")

    def leaf(self, name, ca, sans, usage="serverAuth"):
        """NAME.crt and NAME.key signed by CA, for SANS ("IP:...", "DNS:...")."""
        with open(self.path(name + ".ext"), "w") as f:
            f.write("subjectAltName=%s\nextendedKeyUsage=%s\n" % (",".join(sans), usage))
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self.path(name + ".key"), "-out", self.path(name + ".csr"), "-subj", "/CN=" + name)
        self._openssl("x509", "-req", "-in", self.path(name + ".csr"), "-CA", self.path(ca + ".crt"),
                      "-CAkey", self.path(ca + ".key"), "-CAcreateserial", "-out", self.path(name + ".crt"),
                      "-days", "2", "-extfile", self.path(name + ".ext"))
        return self.path(name + ".crt"), self.path(name + ".key")

    def install(self, name, directory, as_name):
        """NAME.crt and NAME.key copied into directory as AS_NAME.crt/.key."""
        for ext in (".crt", ".key"):
            shutil.copy(self.path(name + ext), os.path.join(directory, as_name + ext))


def recipe_command(path, program):
    """The command line a recipe file's header gives for PROGRAM, as argv
    (the program's name first): the comment lines from the one that
    starts it, joined where they end in a backslash.  Environment
    assignments before it are left out."""
    lines = [line[1:].strip() for line in open(path) if line.startswith("#")]
    for i, line in enumerate(lines):
        if program not in line.split():
            continue
        text = line
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        argv = shlex.split(text)
        return argv[argv.index(program):]
    raise RuntimeError("%s gives no command line for %s" % (path, program))


def with_values(argv, **values):
    """argv with each --FLAG VALUE (or --FLAG=VALUE) given in values
    (flag_name_with_underscores=value) set to that value; a flag the
    command line does not give is an error: the recipe says what runs."""
    out, seen = list(argv), set()
    for i, word in enumerate(out):
        flag = word.split("=", 1)[0]
        key = flag.lstrip("-").replace(".", "_").replace("-", "_")
        if not flag.startswith("--") or key not in values:
            continue
        seen.add(key)
        if "=" in word:
            out[i] = "%s=%s" % (flag, values[key])
        else:
            out[i + 1] = values[key]
    missing = set(values) - seen
    if missing:
        raise RuntimeError("the recipe's command line gives no %s: %s" % (sorted(missing), " ".join(argv)))
    return out


def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7f) | (0x80 if n > 0x7f else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number, wire, payload):
    """One protobuf field: wire 0 (varint, payload its encoding), 1 (8
    bytes) or 2 (length-delimited)."""
    head = _varint(number << 3 | wire)
    return head + (_varint(len(payload)) + payload if wire == 2 else payload)


def snappy_literal(data):
    """data in snappy's block format, every byte a literal: what a remote
    write's body is, uncompressed but valid."""
    out = _varint(len(data))
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        n = len(chunk) - 1
        out += bytes([n << 2]) if n < 60 else bytes([60 << 2, n]) if n < 256 else bytes([61 << 2]) + struct.pack("<H", n)
        out += chunk
    return out


def remote_write_body(series):
    """A remote write request (prometheus.WriteRequest, snappy) of
    SERIES: [(labels dict with __name__, value, timestamp ms)]."""
    body = b""
    for labels, value, ts in series:
        ls = b"".join(_field(1, 2, _field(1, 2, k.encode()) + _field(2, 2, v.encode()))
                      for k, v in sorted(labels.items()))
        sample = _field(1, 1, struct.pack("<d", value)) + _field(2, 0, _varint(ts))
        body += _field(1, 2, ls + _field(2, 2, sample))
    return snappy_literal(body)


REMOTE_WRITE_HEADERS = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
                        "X-Prometheus-Remote-Write-Version": "0.1.0"}


def ip(*args):
    r = bt.run(["ip", *args])
    if r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))


class Proc:
    """A program run in a namespace (`ip netns exec` execs it: the Popen is
    the program itself), its output in LOG."""

    def __init__(self, ns, argv, log, env=None):
        self.log_path = log
        self.log = open(log, "w+")
        self.argv = argv
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)

    def output(self):
        if self.log.closed:  # stopped: the file is all it wrote
            with open(self.log_path, errors="replace") as f:
                return f.read()
        return bt.written(self.log)

    def wait_output(self, pattern, what, timeout=60):
        def seen():
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited (%s): %s" % (what, self.proc.returncode, self.output()[-800:]))
            return re.search(pattern, self.output())
        return bt.wait_for(what, seen, timeout)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM):
        bt.stop_process(self.proc, sig=sig, timeout=20)
        self.log.close()


class Net:
    """A bridge and the namespaces on it, each with one address."""

    def __init__(self):
        self.tag = "bfl%d" % os.getpid()
        self.namespaces, self.veths, self.procs = [], [], []
        self.bridge = None
        ip("link", "add", self.tag, "type", "bridge")
        self.bridge = self.tag
        ip("link", "set", self.tag, "up")

    def add(self, name, octet):
        """Namespace NAME on the bridge at SUBNET.octet; returns (ns, address)."""
        ns = "%s-%s" % (self.tag, name)
        veth, peer = "%sv%d" % (self.tag, octet), "%sp%d" % (self.tag, octet)
        ip("netns", "add", ns)
        self.namespaces.append(ns)
        ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        self.veths.append(veth)
        ip("link", "set", veth, "master", self.bridge, "up")
        ip("link", "set", peer, "netns", ns)
        ip("-n", ns, "link", "set", peer, "name", "eth0")
        ip("-n", ns, "addr", "add", SUBNET + "%d/24" % octet, "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        return ns, SUBNET + str(octet), veth

    def start(self, ns, argv, log, env=None):
        p = Proc(ns, argv, log, env)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in reversed(self.procs):
            if p.alive():
                p.stop()
        for ns in self.namespaces:
            bt.run(["ip", "netns", "del", ns])
        for veth in self.veths:  # gone with its peer's namespace; this covers a half-built one
            if os.path.exists("/sys/class/net/" + veth):
                bt.run(["ip", "link", "del", veth])
        if self.bridge:
            bt.run(["ip", "link", "del", self.bridge])


class Prom:
    """A Prometheus API reached from inside a namespace, as CLIENT."""

    def __init__(self, ns, url, client=NOBODY):
        self.ns, self.url, self.client = ns, url, client

    def api(self, path, **params):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        status, body = request(self.ns, url, self.client)
        if status != 200:
            raise RuntimeError("%s failed (%d): %s" % (url, status, body.decode(errors="replace")[:300]))
        doc = json.loads(body)
        if doc.get("status") != "success":
            raise RuntimeError("%s: %s" % (url, doc))
        return doc["data"]

    def query(self, expr):
        return self.api("/api/v1/query", query=expr)["result"]

    def by(self, expr, label):
        """{label value: float value} of an instant vector."""
        return {r["metric"].get(label): float(r["value"][1]) for r in self.query(expr)}

    def samples(self, expr):
        """[(time, float)] of a range-vector selector's one series."""
        res = self.query(expr)
        if len(res) != 1:
            raise RuntimeError("%s: %d series" % (expr, len(res)))
        return [(float(t), float(v)) for t, v in res[0]["values"]]

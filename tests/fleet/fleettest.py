"""Hosts of a fleet on one machine: network namespaces joined by a bridge,
processes started in them, HTTP from this process into them.

Every name carries this run's PID (bridge "bflPID", namespaces
"bflPID-NAME", veths "bflPIDvN"), so two runs never meet.  The addresses
(SUBNET) live only inside this run's namespaces: the root namespace gets
none, so they cannot collide with the machine's networks or another run's.
Net.cleanup() stops every process and removes every namespace, veth and
the bridge; callers run it in a finally block.
"""
import ctypes
import json
import os
import re
import signal
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


def http_get(ns, url, timeout=10):
    """(status, body bytes) of a GET from inside ns."""
    def get():
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    return in_netns(ns, get)


def answers(ns, url):
    """Does url answer 200 from inside ns (False while it cannot connect)?"""
    try:
        return http_get(ns, url, timeout=3)[0] == 200
    except (OSError, urllib.error.URLError):
        return False


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
    """A Prometheus API reached from inside a namespace."""

    def __init__(self, ns, url):
        self.ns, self.url = ns, url

    def api(self, path, **params):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            _, body = http_get(self.ns, url)
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s failed: %s" % (url, e.read().decode(errors="replace")))
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

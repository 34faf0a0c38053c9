"""Helpers of the exporter tests: run billing-exporter, scrape it, run a
real Prometheus against it, and read the semaphores with billing-probes.

Every process started here is stopped by the caller's finally block
(stop()/cleanup()); ports are chosen free on 127.0.0.1; Prometheus keeps
its data in its own temporary directory, removed on cleanup.
"""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MONITORING = os.path.join(SOURCE_ROOT, "monitoring")

# OpenMetrics as the exporter serves it, and the Accept of Prometheus 2.42
# with --enable-feature=exemplar-storage
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
EXEMPLAR = re.compile(r'^\S+\{handler="([^"]*)",le="([^"]*)"\} \S+ # \{request_id="(\d+)"\} \S+ \S+$')


def exemplars(text):
    """{(request ID, handler, le)} of the bucket lines with an exemplar."""
    return {(m.group(3), m.group(1), m.group(2))
            for m in map(EXEMPLAR.match, text.splitlines()) if m}


def stored_exemplars(prom, family="billing_request_duration_seconds_bucket"):
    """{(request ID, handler, le)} that Prometheus returns for family."""
    found = set()
    for series in prom.exemplars(family):
        labels = series["seriesLabels"]
        for e in series["exemplars"]:
            found.add((e["labels"]["request_id"], labels["handler"], labels["le"]))
    return found


def env_path(name):
    """A program path the meson test passes through the environment."""
    path = os.environ.get(name)
    if not path:
        bt.skip("%s is not set: run through meson test" % name)
    return path


def private_programs(directory, *programs):
    """Copies of PROGRAMS under DIRECTORY (billingtest.private_copy) that
    map one copy of libbillingprobes.so between them: (copies, the
    library's copy).  --binary attaches to these files, which no other
    test's process maps, so a --binary test runs beside others."""
    os.chmod(directory, 0o755)  # another user's run of a copy loads the library too
    copies = [bt.private_copy(p, directory) for p in programs]
    mapped = {bt.loaded_library(c, "libbillingprobes.so") for c in copies}
    inside = os.path.realpath(directory) + os.sep
    if len(mapped) != 1 or not next(iter(mapped)).startswith(inside):
        raise RuntimeError("the copies under %s do not map one copy of libbillingprobes.so there: %s"
                           % (directory, sorted(mapped)))
    return copies, mapped.pop()


def require_exporter_can_run():
    why = bt.why_no_tracing(tracer=None)
    if why:
        bt.skip(why)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, headers=None, timeout=10):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, dict(r.headers), r.read()


class Exporter:
    """billing-exporter on a free port; ready once it prints its URL."""

    def __init__(self, exe, *args, serve=True, timeout=60, listen="127.0.0.1:0", env=None):
        self.out = tempfile.TemporaryFile(mode="w+")
        cmd = [exe, *args] + (["--listen", listen] if serve else [])
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **env) if env else None)
        self.url = None
        deadline = time.monotonic() + timeout
        want = "serving http" if serve else "probe attachments"
        while True:
            text = self.output()
            if want in text:
                break
            if self.proc.poll() is not None:
                raise RuntimeError("billing-exporter exited (%s):\n%s" % (self.proc.returncode, text))
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("billing-exporter not ready within %d s:\n%s" % (timeout, text))
            time.sleep(0.05)
        if serve:
            line = [l for l in self.output().splitlines() if "serving http" in l][0]
            self.url = line.split("serving ", 1)[1].rsplit("/metrics", 1)[0]
            self.port = int(self.url.rsplit(":", 1)[1])

    def output(self):
        return bt.written(self.out)

    def metrics(self, accept=None):
        _, headers, body = http_get(self.url + "/metrics", {"Accept": accept} if accept else None)
        return headers, body.decode("utf-8")

    def samples(self):
        """{(name, frozenset(labels.items())): value} from /metrics."""
        return parse_exposition(self.metrics()[1])

    def stop(self, sig=signal.SIGTERM, timeout=30):
        return bt.stop_process(self.proc, sig, timeout), self.output()


def parse_labels(text):
    """'a="x",b="y\\"z"' -> {"a": "x", "b": 'y"z'} (the exposition's escapes)."""
    labels, i = {}, 0
    while i < len(text):
        eq = text.index("=", i)
        name = text[i:eq].strip(", ")
        j, value = eq + 2, []
        while text[j] != '"':
            if text[j] == "\\":
                value.append({"n": "\n", "\\": "\\", '"': '"'}[text[j + 1]])
                j += 2
            else:
                value.append(text[j])
                j += 1
        labels[name] = "".join(value)
        i = j + 1
    return labels


def parse_exposition(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, value = line.rsplit(" ", 1)
        if "{" in head:
            name, rest = head.split("{", 1)
            labels = parse_labels(rest[:-1])
        else:
            name, labels = head, {}
        out[(name, frozenset(labels.items()))] = float(value)
    return out


PROTOBUF = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"


def _varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return n, i


def _fields(b):
    """A protobuf message's fields: {number: [value, ...]}, varints as
    ints, everything else as its bytes."""
    out, i = {}, 0
    while i < len(b):
        key, i = _varint(b, i)
        kind = key & 7
        if kind == 0:
            v, i = _varint(b, i)
        elif kind == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif kind in (1, 5):
            v, i = b[i:i + (8 if kind == 1 else 4)], i + (8 if kind == 1 else 4)
        else:
            raise ValueError(f"protobuf wire type {kind}")
        out.setdefault(key >> 3, []).append(v)
    return out


def native_histograms(body):
    """The native histograms of a protobuf exposition (length-delimited
    MetricFamily messages): {(family, labels): (count, schema, zero count,
    spans, deltas)}.  client_model's field numbers: MetricFamily name 1,
    metric 4; Metric label 1 (LabelPair name 1, value 2), histogram 7;
    Histogram sample_count 1, schema 5, zero_count 7, positive_span 12,
    positive_delta 13."""
    out, i = {}, 0
    while i < len(body):
        n, i = _varint(body, i)
        family = _fields(body[i:i + n])
        i += n
        for m in map(_fields, family.get(4, [])):
            h = _fields(m[7][0]) if 7 in m else {}
            if 5 not in h:
                continue  # not a histogram, or its classic buckets alone
            labels = tuple(sorted((_fields(x)[1][0].decode(), _fields(x).get(2, [b""])[0].decode())
                                  for x in m.get(1, [])))
            key = (family[1][0].decode(), labels)
            out[key] = (h[1][0], h[5][0], h.get(7, [0])[0], tuple(h.get(12, [])), tuple(h.get(13, [])))
    return out


def total(samples, name, **want):
    """Sum of a metric's samples whose labels include want."""
    return sum(v for (n, labels), v in samples.items()
               if n == name and all(dict(labels).get(k) == w for k, w in want.items()))


class Prometheus:
    """A real Prometheus scraping the given targets every second, with the
    shipped rules, on a free loopback port, storing into a temp dir.
    scrape_configs, when given, replaces the one plain-HTTP job; features
    are --enable-feature names (exemplar-storage); exe is the program (the
    prometheus on PATH unless given); port, when given, its port; args, more
    of its command line."""

    def __init__(self, targets, rule_files=(), timeout=60, scrape_configs=None, features=(), exe="prometheus",
                 port=None, args=()):
        self.dir = tempfile.mkdtemp(prefix="billing-prom-")
        self.port = port or free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [os.path.abspath(f) for f in rule_files],
            "scrape_configs": scrape_configs or [{
                "job_name": "billing-exporter",
                "static_configs": [{"targets": list(targets)}],
            }],
        }
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(
            [exe, "--config.file", cfg, "--storage.tsdb.path", os.path.join(self.dir, "data"),
             "--web.listen-address", "127.0.0.1:%d" % self.port, "--web.enable-lifecycle"]
            + ["--enable-feature=" + f for f in features] + list(args),
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir)
        self.url = "http://127.0.0.1:%d" % self.port
        deadline = time.monotonic() + timeout
        while True:
            try:
                if http_get(self.url + "/-/ready", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited:\n" + self.output())
            if time.monotonic() > deadline:
                raise RuntimeError("prometheus not ready within %d s:\n%s" % (timeout, self.output()))
            time.sleep(0.2)

    def output(self):
        return bt.written(self.log)

    def targets(self):
        """{job: (health, lastError)} of the active targets."""
        _, _, body = http_get(self.url + "/api/v1/targets")
        return {t["labels"]["job"]: (t["health"], t.get("lastError", ""))
                for t in json.loads(body)["data"]["activeTargets"]}

    def query(self, expr):
        """The result list of an instant query (raises on a PromQL error)."""
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            _, _, body = http_get(url)
        except urllib.error.HTTPError as e:
            raise RuntimeError("query %r failed: %s" % (expr, e.read().decode(errors="replace")))
        doc = json.loads(body)
        if doc.get("status") != "success":
            raise RuntimeError("query %r: %s" % (expr, doc))
        return doc["data"]["result"]

    def scalar(self, expr):
        """The single value of expr, or None when it returns nothing."""
        result = self.query(expr)
        if not result:
            return None
        return float(result[0]["value"][1])

    def exemplars(self, expr, since=3600):
        """The result list of /api/v1/query_exemplars over the last since s."""
        now = time.time()
        url = self.url + "/api/v1/query_exemplars?" + urllib.parse.urlencode(
            {"query": expr, "start": "%.3f" % (now - since), "end": "%.3f" % (now + 60)})
        doc = json.loads(http_get(url)[2])
        if doc.get("status") != "success":
            raise RuntimeError("query_exemplars %r: %s" % (expr, doc))
        return doc["data"]

    def cleanup(self):
        bt.stop_process(self.proc)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def fd_info(pid, key):
    """The value of KEY in each fdinfo of process pid that has one: for the
    exporter, "link_type" gives "uprobe_multi" for a multi-uprobe link and
    "perf" for a uprobe per site."""
    out = []
    for f in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            with open(f) as lines:
                out += [l.split(":", 1)[1].strip() for l in lines if l.startswith(key + ":")]
        except OSError:
            pass
    return out


def semaphores(tool, pid):
    """{probe: traced 'yes'/'no'} per module line of billing-probes list PID."""
    p = bt.run([tool, "list", str(pid)])
    out = {}
    for line in p.stdout.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 6 and cols[1] == "billing":
            out.setdefault(cols[2], []).append(cols[5])
    return out


class FireProgram:
    """tests/exporter/fire_program: waits for the exporter, fires, then
    stays alive until release()."""

    def __init__(self, exe, *args):
        self.proc = subprocess.Popen([exe, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        if not first.startswith("waiting pid"):
            raise RuntimeError("fire_program did not start: %r %s" % (first, self.proc.stderr.read()))
        self.pid = self.proc.pid

    def fired(self, timeout=120):
        """The 'fired k=v ...' line as a dict, once it has fired.

        Read in a thread, not after select(): a program that fires at once
        (its probes attached before it started) writes both its lines
        together, the first readline() buffers the second, and select() on
        the pipe would then wait for nothing."""
        import threading
        got = []
        reader = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not got:
            raise RuntimeError("fire_program did not fire within %d s" % timeout)
        line = got[0]
        if not line.startswith("fired"):
            raise RuntimeError("fire_program: %r %s" % (line, self.proc.stderr.read()))
        return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}

    def release(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def fire_and_scrape(exporter_exe, fire_exe, fire_args, exporter_args=()):
    """Start fire_program, attach the exporter to it with --pid, let it fire,
    scrape once, stop both.  (fired counts, samples, exporter output, exit code)."""
    prog = FireProgram(fire_exe, *fire_args)
    ex = None
    try:
        ex = Exporter(exporter_exe, "--pid", str(prog.pid), *exporter_args)
        fired = prog.fired()
        samples = ex.samples()
    finally:
        rc, out = ex.stop() if ex else (None, "")
        prog.release()
    return fired, samples, out, rc

"""What the userpath tests share beyond tests/lib/billingtest.py: the kit
installed the README's way, the independent service built against it,
its books, and the figures its books say every consumer must show.

The kit (one fixture for the suite): this source tree configured with
`meson setup --prefix`, built, and `meson install`ed, twice -- "plain"
(-Dprobes=enabled, the default stats=disabled) and "stats"
(-Dstats=enabled) -- then tests/userpath/service.c compiled out of tree
against each with `cc service.c $(pkg-config --cflags --libs
billing-probes)`, finding libbillingprobes.so at run time through an
rpath to `pkg-config --variable=libdir billing-probes`.  The kits live in
a directory of the build tree named after a hash of every file they are
built from (UP_WORK/KEY), made once under a lock: the first test of the
suite to ask builds them (userpath-kit, started first by its priority),
the others wait for it and reuse them; a change to the library, tools,
scripts or service makes a new key (older ones are removed).
"""
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import billingtest as bt  # noqa: E402

SOURCE_ROOT = os.environ.get("UP_SOURCE_ROOT", bt.SOURCE_ROOT)
WORK = os.environ.get("UP_WORK", "")
SERVICE_C = os.path.join(HERE, "service.c")
sys.path.insert(0, os.path.join(SOURCE_ROOT, "provider"))
import billing_d  # noqa: E402  (the generator's own reader of billing.d)
sys.path.insert(0, os.path.join(HERE, "..", "exporter"))
import exportertest  # noqa: E402  (billing-exporter and Prometheus, run and read)

PROVIDER = billing_d.parse(os.path.join(SOURCE_ROOT, "provider", "billing.d"))
DEADLINE = 120  # seconds for any one condition: ten times what a slow machine needs
# What the kit is built from: a change in any of these files is a new kit.
KIT_INPUTS = ("meson.build", "meson_options.txt", "provider", "include", "lib", "tools", "d-scripts",
              "monitoring")
KIT_OPTIONS = {
    "plain": ["-Dprobes=enabled"],
    "stats": ["-Dprobes=enabled", "-Dstats=enabled"],
}
COMMON_OPTIONS = ["-Dtool=enabled", "-Dexporter=enabled", "-Dexamples=disabled", "-Db_sanitize=none",
                  "--buildtype=debugoptimized"]


def require_work():
    if not WORK:
        bt.skip("UP_WORK is not set: run through meson test")


# --- the kit ------------------------------------------------------------------------

def _kit_key():
    h = hashlib.sha256()
    for top in KIT_INPUTS:
        path = os.path.join(SOURCE_ROOT, top)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(d, f) for d, dirs, fs in os.walk(path) for f in fs)
        for f in files:
            h.update(os.path.relpath(f, SOURCE_ROOT).encode() + b"\0")
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
    h.update(open(SERVICE_C, "rb").read())
    h.update(repr((KIT_OPTIONS, COMMON_OPTIONS)).encode())
    return h.hexdigest()[:16]


def _step(cmd, log, **kw):
    """Runs a build step, its output appended to LOG; raises with its tail on failure."""
    with open(log, "a") as out:
        out.write("$ %s\n" % " ".join(cmd))
        out.flush()
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kw)
    if r.returncode != 0:
        tail = open(log, errors="replace").read()[-4000:]
        raise RuntimeError("%s exited %d:\n%s" % (" ".join(cmd[:3]), r.returncode, tail))


class Kit:
    """One installed kit and the service built against it."""

    def __init__(self, root, variant):
        self.variant = variant
        self.root = root
        self.prefix = os.path.join(root, "prefix")
        pcs = glob.glob(os.path.join(self.prefix, "**", "pkgconfig", "billing-probes.pc"), recursive=True)
        self.pkg_env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0])) if pcs else None
        self.tool = os.path.join(self.prefix, "bin", "billing-probes")
        self.exporter = os.path.join(self.prefix, "bin", "billing-exporter")
        self.service = os.path.join(root, "service")
        self.libdir = self.pkg_config("--variable=libdir") if pcs else ""
        # the file the dynamic loader maps (the .so.0 link resolved)
        self.lib = os.path.realpath(os.path.join(self.libdir, "libbillingprobes.so"))

    @contextlib.contextmanager
    def turn(self):
        """The kit to this test alone while it holds it: `--binary` counts
        every process running the service or mapping the library, so two
        tests running this kit's service side by side would count each
        other's (the kits of the two variants are separate files)."""
        with open(os.path.join(self.root, ".turn"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield self

    def pkg_config(self, *args):
        r = bt.run(["pkg-config", *args, "billing-probes"], env=self.pkg_env)
        if r.returncode != 0:
            raise RuntimeError("pkg-config %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout.strip()


def _build_kit(root, variant):
    build, prefix, log = (os.path.join(root, n) for n in ("build", "prefix", "build.log"))
    _step(["meson", "setup", build, SOURCE_ROOT, "--prefix", prefix] + KIT_OPTIONS[variant] + COMMON_OPTIONS,
          log)
    # only the targets meson install copies (the tests and benchmarks of the
    # nested tree are not the kit)
    targets = json.loads(subprocess.run(["meson", "introspect", build, "--targets"], capture_output=True,
                                        text=True, check=True).stdout)
    outputs = sorted(os.path.relpath(f, build) for t in targets if t["installed"] for f in t["filename"])
    _step(["ninja", "-C", build] + outputs, log)
    _step(["meson", "install", "-C", build, "--no-rebuild", "--quiet"], log)
    kit = Kit(root, variant)
    # the README's build line, with the library found at run time by an rpath
    flags = kit.pkg_config("--cflags", "--libs").split()
    _step(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", SERVICE_C] + flags +
          ["-o", kit.service, "-Wl,-rpath," + kit.libdir], log)
    shutil.rmtree(build)  # the kit is what was installed; 100+ MB of objects are not


def kits():
    """{"plain": Kit, "stats": Kit}, built unless this source state's are."""
    require_work()
    os.makedirs(WORK, exist_ok=True)
    key = _kit_key()
    here = os.path.join(WORK, key)
    with open(os.path.join(WORK, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(here, "ready")):
            for old in glob.glob(os.path.join(WORK, "*")):
                shutil.rmtree(old, ignore_errors=True)
            for variant in KIT_OPTIONS:
                root = os.path.join(here, variant)
                os.makedirs(root)
                t0 = time.monotonic()
                _build_kit(root, variant)
                print("kit %s built and installed in %.0f s: %s" % (variant, time.monotonic() - t0, root),
                      flush=True)
            open(os.path.join(here, "ready"), "w").close()
    return {v: Kit(os.path.join(here, v), v) for v in KIT_OPTIONS}


# --- the service --------------------------------------------------------------------

OPS = 16  # requests per thread per batch: two rounds of the 8-request schedule


class Service:
    """The service, its parent, its workers {slot: pid} and its books.

    prefix runs it as another user (setpriv ...); env is its environment."""

    def __init__(self, kit, books_dir, workers=3, threads=2, prefix=(), env=None):
        self.books_dir = books_dir
        self.proc = subprocess.Popen(list(prefix) + [kit.service, "--workers", str(workers), "--threads",
                                                     str(threads), "--books", books_dir],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.out = bt.Lines(self.proc.stdout, DEADLINE)
        self.workers = {}
        for _ in range(workers):
            _, slot, _, pid = self.out.wait_for(lambda l: l.startswith("worker "), "a worker").split()
            self.workers[int(slot)] = int(pid)
        self.parent = int(self.out.wait_for(lambda l: l.startswith("parent "), "the parent").split()[1])
        self.batches = 0

    def pids(self):
        return [self.parent] + [self.workers[s] for s in sorted(self.workers)]

    def batch(self, ops=OPS):
        """Runs the next batch in every worker; returns its number once
        every worker has written its books."""
        self.batches += 1
        b = self.batches
        self.proc.stdin.write("batch %d %d\n" % (b, ops))
        self.proc.stdin.flush()
        waiting = set(self.workers.values())
        while waiting:
            line = self.out.wait_for(lambda l: l.startswith("done ") and int(l.split()[4]) == b,
                                     "batch %d from workers %s" % (b, sorted(waiting)))
            waiting.discard(int(line.split()[3]))
        return b

    def kill_worker(self, slot):
        """SIGKILL the worker of SLOT between batches; returns the PID of the
        worker the parent starts in its place, once it is up."""
        old = self.workers[slot]
        os.kill(old, signal.SIGKILL)
        self.out.wait_for(lambda l: l.split()[:3] == ["died", str(slot), str(old)], "worker %d to die" % old)
        line = self.out.wait_for(lambda l: l.startswith("worker %d " % slot), "the replacement of %d" % old)
        self.workers[slot] = int(line.split()[3])
        return self.workers[slot]

    def stop(self):
        """End of input: the workers write their books and exit, then the parent."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=DEADLINE)
            except (OSError, subprocess.TimeoutExpired):
                bt.stop_process(self.proc, signal.SIGKILL, group=list(self.workers.values()))
        return self.proc.returncode

    def books(self):
        return Books.read(self.books_dir)


class Books:
    """The service's books: every event its workers recorded, as
    {probe: [(pid, batch, request_id, [args in billing.d's order])]}."""

    def __init__(self, events, workers):
        self.events = events
        self.workers = workers  # [(slot, gen, pid, [batches])]

    @classmethod
    def read(cls, books_dir):
        events, workers = {p.name: [] for p in PROVIDER.probes}, []
        for path in sorted(glob.glob(os.path.join(books_dir, "books-*.json"))):
            doc = json.load(open(path))
            workers.append((doc["slot"], doc["gen"], doc["pid"], doc["batches"]))
            for probe, rows in doc["events"].items():
                events[probe] += [(doc["pid"], r[0], r[1], r[2:]) for r in rows]
        return cls(events, workers)

    def only(self, batches=None, pids=None):
        """The books of those batches and processes."""
        keep = {p: [e for e in rows if (batches is None or e[1] in batches) and (pids is None or e[0] in pids)]
                for p, rows in self.events.items()}
        return Books(keep, self.workers)

    def plus(self, other):
        """These books and OTHER's events (of other batches or processes)."""
        return Books({p: rows + other.events[p] for p, rows in self.events.items()}, self.workers)

    def fires(self, probe):
        """[args] of every event of PROBE (D name)."""
        return [e[3] for e in self.events[probe]]

    def count(self):
        return sum(len(rows) for rows in self.events.values())


# --- what the books say a consumer must show -----------------------------------------

def _probe(name):
    return next(p for p in PROVIDER.probes if p.name == name)


def expected_metrics(books):
    """{(metric name, frozenset(labels)): value} of every metric billing.d
    declares, from the books: the samples billing-exporter must serve
    (counters; histograms as _bucket per le, _count and _sum), whatever
    its source.  Read from billing.d's "@@" declarations, so no metric is
    restated here."""
    ms = PROVIDER.metrics
    out = {}

    def add(key, v):
        out[key] = out.get(key, 0) + v

    for feed in ms.feeds:
        names = [a[0] for a in feed.probe.args]
        for args in books.fires(feed.probe.name):
            arg = dict(zip(names, args))
            for m in feed.metrics:
                if m.where and arg[m.where] == 0:
                    continue
                labels = {}
                for lb in m.labels:
                    if lb.kind == "constant":
                        labels[lb.name] = lb.constant
                    elif lb.kind == "ternary":
                        labels[lb.name] = lb.nonzero if arg[lb.arg] != 0 else lb.zero
                    else:
                        labels[lb.name] = str(arg[lb.arg])
                if m.source == "count":
                    add((m.name, frozenset(labels.items())), 1)
                    continue
                q = ms.quantities[m.quantity]
                x = arg[m.quantity]
                if m.source == "sum":
                    add((m.name, frozenset(labels.items())), x)
                    continue
                if q.unmeasured_zero and x == 0:
                    continue
                for text, raw in list(zip(q.bounds_text, q.bounds_raw)) + [("+Inf", None)]:
                    le = frozenset(dict(labels, le=_le(text)).items())
                    add((m.name + "_bucket", le), 1 if raw is None or x <= raw else 0)
                add((m.name + "_count", frozenset(labels.items())), 1)
                add((m.name + "_sum", frozenset(labels.items())), x)
    # sums in the metric's unit, as the exporter divides them (a double)
    divided = set()
    for m in ms.metrics:
        name = m.name + ("_sum" if m.source == "observe" else "")
        if m.source == "count" or name in divided:
            continue
        divided.add(name)
        q = ms.quantities[m.quantity]
        for key in [k for k in out if k[0] == name]:
            out[key] = out[key] if q.divide == 1 else float(out[key]) / q.divide
    return out


def _le(text):
    """An le value as Prometheus writes it back: the float's shortest form."""
    return "+Inf" if text == "+Inf" else _float_text(float(text))


def _float_text(v):
    return repr(float(v)) if float(v) != int(float(v)) else "%d" % int(float(v))


def normalise(samples):
    """Exporter or Prometheus samples {(name, frozenset(labels))} with the
    le label in one spelling, only billing_* service metrics (not the
    exporter's own billing_exporter_*)."""
    out = {}
    for (name, labels), v in samples.items():
        if not name.startswith("billing_") or name.startswith("billing_exporter_"):
            continue
        labels = dict(labels)
        if "le" in labels:
            labels["le"] = _le(labels["le"])
        out[(name, frozenset(labels.items()))] = v
    return out


def compare_metrics(got, want, what):
    """One check: every sample served equals the books', family by
    family (a sample with value 0 counts as absent on both sides: a
    family's series appear with their first fire); a difference names
    the families and their first differing series."""
    got = {k: v for k, v in normalise(got).items() if v != 0}
    want = {k: v for k, v in want.items() if v != 0}
    families = sorted({k[0] for k in want} | {k[0] for k in got})
    differ = []
    for fam in families:
        g = {k: v for k, v in got.items() if k[0] == fam}
        w = {k: v for k, v in want.items() if k[0] == fam}
        if g != w:
            k = next(k for k in sorted(set(g) | set(w), key=str) if g.get(k) != w.get(k))
            differ.append("%s: %d series of %d differ, e.g. %s served %s, books %s" % (
                fam, sum(1 for x in set(g) | set(w) if g.get(x) != w.get(x)), len(set(g) | set(w)),
                dict(k[1]), g.get(k), w.get(k)))
    requests = sum(v for k, v in want.items() if k[0] == "billing_requests_total")
    bt.check(not differ and want, "%s: %d families, %d series (%d requests) %s" % (
        what, len(families), len(want), requests,
        "equal to the books" if not differ else "DIFFER from the books in %d: %s" % (len(differ), "; ".join(differ))))


def prometheus_samples(prom, names, job):
    """{(name, frozenset(labels))} of NAMES as Prometheus answers them for
    JOB (its own job and instance labels left out)."""
    out = {}
    for name in names:
        for r in prom.query('%s{job="%s"}' % (name, job)):
            labels = {k: v for k, v in r["metric"].items() if k not in ("__name__", "job", "instance")}
            out[(name, frozenset(labels.items()))] = float(r["value"][1])
    return out


# --- the shipped scripts through `billing-probes trace` --------------------------------

SCRIPTS = ("tps", "biz_metrics", "amount_dist", "request_latency", "slow_requests", "errors")
# request_latency's and slow_requests' threshold: the schedule's slow requests
# (report.export's 30 ms, invoices and payments of one round in four: 25 ms)
SLOW_MS = 20
# the scripts' arguments: one report at exit (an interval longer than any run), the threshold
SCRIPT_ARGS = {"tps": [], "biz_metrics": ["3600"], "amount_dist": [], "errors": ["3600"],
               "request_latency": [str(SLOW_MS), "3600"], "slow_requests": [str(SLOW_MS)]}


def script_probes(kit, script):
    """The probes (ELF names) an installed script names."""
    path = os.path.join(kit.prefix, "share", "billing-probes", "d-scripts", "bpftrace", script + ".bt")
    return set(re.findall(r"usdt::billing:(\w+)", open(path).read()))


class Trace:
    """`billing-probes trace SCRIPT TARGET... -- ARGS` of the kit, running."""

    def __init__(self, kit, script, target_args, script_args=None):
        self.script, self.target = script, " ".join(target_args)
        self.err = tempfile.TemporaryFile(mode="w+")
        args = SCRIPT_ARGS[script] if script_args is None else script_args
        self.proc = subprocess.Popen([kit.tool, "trace", script, *target_args, "--", *args],
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.lines = bt.Lines(self.proc.stdout, DEADLINE)

    def what(self):
        return "trace %s %s" % (self.script, self.target)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def started(self):
        """True once the script has printed its "Tracing ..." line (BEGIN:
        every probe attached); False, with why, when it ended instead."""
        try:
            self.lines.wait_for(lambda l: l.startswith("Tracing "), "%s to start" % self.what())
            return True
        except RuntimeError as e:
            bt.check(False, "%s started (exit %s, %s; %s)" % (self.what(), self.proc.poll(),
                                                              self.stderr().strip()[-400:], e))
            return False

    def stop(self):
        """Ctrl-C (trace passes it on; bpftrace prints its END); (exit, output, stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode, "\n".join(self.lines.rest()), self.stderr()


def traced(kit, pid):
    """{ELF probe name: all its sites traced} in PID (billing-probes list)."""
    r = bt.run([kit.tool, "list", str(pid), "--json", "-P", "billing"])
    if r.returncode != 0:
        return {}
    out = {}
    for p in json.loads(r.stdout)["probes"]:
        out[p["name"]] = out.get(p["name"], True) and bool(p["traced"])
    return out


def wait_traced(kit, pids, probes, timeout=DEADLINE):
    """Waits until every probe of PROBES is traced in every PID (its
    semaphore raised: a tracer attached); False after TIMEOUT seconds."""
    try:
        bt.wait_for("semaphores of %s raised in %s" % (sorted(probes), pids),
                    lambda: all(all(traced(kit, pid).get(p) for p in probes) for pid in pids),
                    timeout=timeout, interval=0.1)
        return True
    except RuntimeError:
        return False


# what each script shows, from its output (None: no TOTAL) and from the books

def pow2_bucket(v):
    """The lower bound of bpftrace's hist() bucket of v ("neg" below 0)."""
    return "neg" if v < 0 else 0 if v == 0 else 1 << (v.bit_length() - 1)


_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_HIST_ROW = re.compile(r"^(?:\[(\d+)([KMGTPE]?)(?:, [^)\]]+)?[\])]|\(\.\.\., 0\))\s+(\d+) \|")


def hists(text, name):
    """bpftrace's printed hist() maps @NAME[KEYS]: {(keys): {bucket lower bound: count}},
    buckets with a count only."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^@%s\[(.*)\]:\s*$" % name, line)
        if m:
            cur = tuple(m.group(1).split(", "))
            out[cur] = {}
            continue
        m = _HIST_ROW.match(line) if cur is not None else None
        if m and int(m.group(3)):
            low = "neg" if m.group(1) is None else int(m.group(1)) * _SUFFIX[m.group(2)]
            out[cur][low] = int(m.group(3))
        elif not m:
            cur = None
    return out


def _counter(pairs):
    out = {}
    for k, v in pairs:
        out[k] = out.get(k, 0) + v
    return out


def _dash(s):
    return s or "-"


def _total_part(text):
    return text.split("TOTAL since start", 1)[1] if "TOTAL since start" in text else None


def shown(script, text):
    """What SCRIPT's output says, in the shape want() gives."""
    if script == "tps":
        secs = bt.tps_seconds(text)
        return {"transactions": sum(s[0] for s in secs), "failed": sum(s[1] for s in secs)} if secs else None
    if script == "amount_dist":
        if "Transaction amounts by" not in text:
            return None
        return {"stats": {(c, k): (int(n), int(a), int(t)) for c, k, n, a, t in re.findall(
                    r"^@stats_minor\[(.*), (.*)\]: count (\d+), average (-?\d+), total (-?\d+)$", text, re.M)},
                "hist": hists(text, "amount_minor"),
                "unbinned": {(c, k): int(n) for c, k, n in re.findall(
                    r"^@amount_minor_unbinned\[(.*), (.*)\]: (\d+)$", text, re.M)}}
    if script == "slow_requests":
        trails, cur = {}, None
        for line in text.splitlines():
            m = re.match(r"^SLOW REQUEST (\S+) (\S+)$", line)
            if m:
                cur = trails.setdefault(int(m.group(1)) if m.group(1).isdigit() else m.group(1),
                                        (m.group(2), []))[1]
            elif cur is not None and re.match(r"^\s+\+\s*\d+ us\s", line):
                cur.append(" ".join(re.sub(r"^\s+\+\s*\d+ us\s", "", line).split()))
            else:
                cur = None
        return {rid: (h, sorted(ev)) for rid, (h, ev) in trails.items()}
    tot = _total_part(text)
    if tot is None:
        return None
    if script == "errors":
        n = re.search(r"^errors (\d+)$", tot, re.M)
        return {"errors": int(n.group(1)) if n else None,
                "rows": {(c, int(k)): int(v) for c, k, v in re.findall(
                    r"^@errors_total\[(.*), (-?\d+)\]: (\d+)$", tot, re.M)}}
    if script == "biz_metrics":
        inv = re.search(r"^invoices (\d+)$", tot, re.M)
        pay = re.search(r"^payments approved (\d+) declined (\d+)", tot, re.M)
        ref = re.search(r"^refunds (\d+)$", tot, re.M)
        return {"invoices": int(inv.group(1)) if inv else None,
                "approved": int(pay.group(1)) if pay else None, "declined": int(pay.group(2)) if pay else None,
                "refunds": int(ref.group(1)) if ref else None,
                "payments": {(g, int(c)): int(n) for g, c, n in re.findall(
                    r"^@payments_total\[(.*), (-?\d+)\]: (\d+)$", tot, re.M)},
                "amounts": {(c, m): int(n) for c, m, n in re.findall(
                    r"^@amount_minor_total\[(.*), (\w+)\]: (-?\d+)$", tot, re.M)},
                "reasons": {r: int(n) for r, n in re.findall(r"^@refunds_total\[(.*)\]: (\d+)$", tot, re.M)}}
    if script == "request_latency":
        table = tot.split("\nUNMEASURED", 1)[0]
        un = re.search(r"^UNMEASURED \(duration 0, skipped\): (\d+)$", tot, re.M)
        return {"rows": {h: (int(n), int(s)) for h, n, s in re.findall(
                    r"^(\S+)\s+(\d+)\s+(\d+)\s+\d+\.\d\d\s+\d+\s+\d+\s+\d+$", table, re.M)},
                "unmeasured": int(un.group(1)) if un else None,
                "hist": hists(tot, "usecs")}
    raise ValueError(script)


def trail_line(probe, a):
    """An event of a slow request's trail as slow_requests prints it
    (its DETAIL, fields separated by one blank), from the books."""
    us = a[-1] // 1000 if isinstance(a[-1], int) else None
    detail = {
        "request-start": lambda: "handler=%s" % _dash(a[1]),
        "transaction-start": lambda: "tx=%d kind=%s amount=%d %s" % (a[0], _dash(a[1]), a[2], _dash(a[3])),
        "transaction-done": lambda: "tx=%d kind=%s status=%d" % (a[0], _dash(a[1]), a[2]),
        "invoice-create": lambda: "invoice=%d amount=%d %s" % (a[0], a[2], _dash(a[3])),
        "payment-auth": lambda: "amount=%d %s gateway=%s result=%d" % (a[1], _dash(a[2]), _dash(a[3]), a[4]),
        "refund-process": lambda: "amount=%d %s reason=%s" % (a[2], _dash(a[3]), _dash(a[4])),
        "error": lambda: "component=%s code=%d" % (_dash(a[1]), a[2]),
        "db-query-start": lambda: "op=%s" % _dash(a[1]),
        "db-query-done": lambda: "op=%s status=%d duration_us=%d" % (_dash(a[1]), a[2], us),
        "gateway-call-start": lambda: "gateway=%s op=%s" % (_dash(a[1]), _dash(a[2])),
        "gateway-call-done": lambda: "gateway=%s op=%s status=%d duration_us=%d" % (_dash(a[1]), _dash(a[2]), a[3], us),
        "request-done": lambda: "handler=%s status=%d duration_us=%d" % (_dash(a[1]), a[2], us),
    }[probe]
    return probe + " " + detail()


# amount_dist under bpftrace 0.17, whose hist() files every value from 2^31
# up in [2G, 4G): amounts from 2^32 on are counted beside the histogram
# (@amount_minor_unbinned), never in a wrong bucket
UNBINNED_FROM = 1 << 32


def want(script, books, unbinned_from=None):
    """What SCRIPT must show for the events of BOOKS (amount_dist: amounts
    from UNBINNED_FROM on counted beside the histogram when the script
    does so, else every amount in its own bucket)."""
    if script == "tps":
        done = books.fires("transaction-done")
        return {"transactions": len(done), "failed": sum(1 for f in done if f[2] != 0)}
    if script == "errors":
        err = books.fires("error")
        return {"errors": len(err), "rows": _counter(((_dash(f[1]), f[2]), 1) for f in err)}
    if script == "biz_metrics":
        inv, pay, ref = (books.fires(p) for p in ("invoice-create", "payment-auth", "refund-process"))
        return {"invoices": len(inv), "approved": sum(1 for f in pay if f[4] == 0),
                "declined": sum(1 for f in pay if f[4] != 0), "refunds": len(ref),
                "payments": _counter(((_dash(f[3]), f[4]), 1) for f in pay),
                "amounts": _counter([((_dash(f[3]), "invoices"), f[2]) for f in inv] +
                                    [((_dash(f[2]), "declined" if f[4] else "approved"), f[1]) for f in pay] +
                                    [((_dash(f[3]), "refunds"), f[2]) for f in ref]),
                "reasons": _counter((_dash(f[4]), 1) for f in ref)}
    if script == "amount_dist":
        stats, hist, unbinned = {}, {}, {}
        for tx, kind, amount, cur in books.fires("transaction-start"):
            key = (_dash(cur), _dash(kind))
            n, total = stats.get(key, (0, 0))
            stats[key] = (n + 1, total + amount)
            if unbinned_from is not None and amount >= unbinned_from:
                unbinned[key] = unbinned.get(key, 0) + 1
                continue
            b = hist.setdefault(key, {})
            b[pow2_bucket(amount)] = b.get(pow2_bucket(amount), 0) + 1
        # bpftrace's average: 64-bit integer division, truncated toward 0
        return {"stats": {k: (n, (abs(t) // n) * (1 if t >= 0 else -1), t) for k, (n, t) in stats.items()},
                "hist": hist, "unbinned": unbinned}
    if script == "request_latency":
        done = books.fires("request-done")
        measured = [f for f in done if f[3] != 0]
        hist = {}
        for f in measured:
            b = hist.setdefault((_dash(f[1]),), {})
            b[pow2_bucket(f[3] // 1000)] = b.get(pow2_bucket(f[3] // 1000), 0) + 1
        return {"rows": {h: (n, s) for h, n, s in (
                    (h, sum(1 for f in measured if _dash(f[1]) == h),
                     sum(1 for f in measured if _dash(f[1]) == h and f[3] > SLOW_MS * 1000000))
                    for h in {_dash(f[1]) for f in measured})},
                "unmeasured": len(done) - len(measured), "hist": hist}
    if script == "slow_requests":
        slow = {f[0]: f[1] for f in books.fires("request-done") if f[3] > SLOW_MS * 1000000}
        trails = {rid: (_dash(h), []) for rid, h in slow.items()}
        for probe, rows in books.events.items():
            for _, _, rid, args in rows:
                if rid in trails:
                    trails[rid][1].append(trail_line(probe, args))
        return {rid: (h, sorted(ev)) for rid, (h, ev) in trails.items()}
    raise ValueError(script)


# --- billing-exporter and Prometheus ----------------------------------------------------

def start_exporter(kit, what, args, prefix=()):
    """The kit's billing-exporter serving every metric group on a free
    port (run through PREFIX: setpriv ...); None, with a failed check
    saying why, when it does not start."""
    try:
        return exportertest.Exporter(*prefix, kit.exporter, *args, "--metrics", "all")
    except RuntimeError as e:
        bt.check(False, "%s starts (%s)" % (what, str(e).strip()[-400:]))
        return None


def prometheus(exporters):
    """A real Prometheus scraping {job: Exporter} every second."""
    return exportertest.Prometheus([], scrape_configs=[
        {"job_name": job, "static_configs": [{"targets": ["127.0.0.1:%d" % ex.port]}]}
        for job, ex in exporters.items()])


def prometheus_agrees(prom, jobs):
    """{job: (Exporter, Books)}: once Prometheus has scraped each job's
    exporter after the last batch (its requests total is what the
    exporter serves now), every family it answers equals those books."""
    for job, (ex, books) in jobs.items():
        served = exportertest.total(ex.samples(), "billing_requests_total")
        try:
            bt.wait_for("Prometheus to scrape %s after the last batch" % job,
                        lambda: prom.scalar('sum(billing_requests_total{job="%s"})' % job) == served,
                        timeout=DEADLINE)
        except RuntimeError as e:
            bt.check(False, str(e))
            continue
        want = expected_metrics(books)
        names = sorted({k[0] for k in want})
        compare_metrics(prometheus_samples(prom, names, job), want, "Prometheus, job %s" % job)

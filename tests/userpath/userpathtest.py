"""What the userpath tests share beyond tests/lib/billingtest.py: the kit
installed the README's way, the independent service built against it,
its books, and the metrics its books say billing-exporter must serve
(trace_figures.py: what they say each shipped script must print).

The kit (one fixture for the suite): this source tree configured with
`meson setup --prefix`, built, and `meson install`ed once; it holds both
libraries, and tests/userpath/service.c is compiled out of tree against
each module of it -- "plain" with `cc service.c $(pkg-config --cflags
--libs billing-probes)` (USDT only, libbillingprobes.so) and "stats" with
the same line naming billing-probes-stats (libbillingprobes-stats.so: the
probes that feed metrics also count into the segment) -- each finding its
library at run time through an rpath to `pkg-config --variable=libdir`.
Kit(variant) is one of the two services with the installed kit.  The kits live in
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
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import billingtest as bt  # noqa: E402

SOURCE_ROOT = os.environ.get("UP_SOURCE_ROOT", bt.SOURCE_ROOT)
# The kit's tool finds the kit's scripts, not the source tree's the test
# set-up names for a build tree's tool (meson.build: BILLING_PROBES_SCRIPTS).
os.environ.pop("BILLING_PROBES_SCRIPTS", None)
WORK = os.environ.get("UP_WORK", "")
SERVICE_C = os.path.join(HERE, "service.c")
sys.path.insert(0, os.path.join(SOURCE_ROOT, "provider"))
import billing_d  # noqa: E402  (the generator's own reader of billing.d)
sys.path.insert(0, os.path.join(HERE, "..", "exporter"))
import exportertest  # noqa: E402  (billing-exporter and Prometheus, run and read)
sys.path.insert(0, os.path.join(HERE, "..", "stats"))
import statstest  # noqa: E402  (the copy of billing.d another build is made from)

PROVIDER = billing_d.parse(os.path.join(SOURCE_ROOT, "provider", "billing.d"))
DEADLINE = 120  # seconds for any one condition: ten times what a slow machine needs
# What the kit is built from: a change in any of these files is a new kit.
KIT_INPUTS = ("meson.build", "meson_options.txt", "provider", "include", "lib", "tools", "d-scripts",
              "monitoring")
# the pkg-config module and library of each variant: one kit, two services
MODULES = {"plain": ("billing-probes", "libbillingprobes.so"),
           "stats": ("billing-probes-stats", "libbillingprobes-stats.so")}
KIT_OPTIONS = ["-Dprobes=enabled", "-Dstats=enabled", "-Dtool=enabled", "-Dexporter=enabled",
               "-Dexamples=disabled", "-Db_sanitize=none", "--buildtype=debugoptimized"]


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
    h.update(repr((KIT_OPTIONS, MODULES)).encode())
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
    """The installed kit (under KIT_ROOT) and the service built against its
    VARIANT's module (in KIT_ROOT/VARIANT)."""

    def __init__(self, kit_root, variant):
        self.variant = variant
        self.module, libname = MODULES[variant]
        self.root = os.path.join(kit_root, variant)
        self.prefix = os.path.join(kit_root, "prefix")
        self.build = os.path.join(kit_root, "build")  # removed once installed; its path is what a tool must not carry
        pcs = glob.glob(os.path.join(self.prefix, "**", "pkgconfig", self.module + ".pc"), recursive=True)
        self.pkg_env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0])) if pcs else None
        self.tool = os.path.join(self.prefix, "bin", "billing-probes")
        self.exporter = os.path.join(self.prefix, "bin", "billing-exporter")
        self.service = os.path.join(self.root, "service")
        self.libdir = self.pkg_config("--variable=libdir") if pcs else ""
        self.soname = libname + ".0"
        # the file the dynamic loader maps (the .so.0 link resolved)
        self.lib = os.path.realpath(os.path.join(self.libdir, libname))

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
        r = bt.run(["pkg-config", *args, self.module], env=self.pkg_env)
        if r.returncode != 0:
            raise RuntimeError("pkg-config %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout.strip()


def _build_kit(root, source=SOURCE_ROOT):
    """The kit installed under ROOT/prefix, and the service built against
    each of its modules (ROOT/VARIANT/service)."""
    build, prefix, log = (os.path.join(root, n) for n in ("build", "prefix", "build.log"))
    _step(["meson", "setup", build, source, "--prefix", prefix] + KIT_OPTIONS, log)
    # only the targets meson install copies (the tests and benchmarks of the
    # nested tree are not the kit)
    targets = json.loads(subprocess.run(["meson", "introspect", build, "--targets"], capture_output=True,
                                        text=True, check=True).stdout)
    outputs = sorted(os.path.relpath(f, build) for t in targets if t["installed"] for f in t["filename"])
    _step(["ninja", "-C", build] + outputs, log)
    _step(["meson", "install", "-C", build, "--no-rebuild", "--quiet"], log)
    for variant in MODULES:
        kit = Kit(root, variant)
        os.makedirs(kit.root, exist_ok=True)
        if kit.pkg_env is None:
            raise RuntimeError("the installed kit has no %s.pc (under %s)" % (kit.module, prefix))
        # the README's build line, with the library found at run time by an rpath
        flags = kit.pkg_config("--cflags", "--libs").split()
        _step(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", SERVICE_C] + flags +
              ["-o", kit.service, "-Wl,-rpath," + kit.libdir], log)
    shutil.rmtree(build)  # the kit is what was installed; 100+ MB of objects are not


def kits():
    """{"plain": Kit, "stats": Kit}: one kit, built unless this source
    state's is, and its two services."""
    require_work()
    os.makedirs(WORK, exist_ok=True)
    key = _kit_key()
    here = os.path.join(WORK, key)
    with open(os.path.join(WORK, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(here, "ready")):
            for old in glob.glob(os.path.join(WORK, "*")):
                shutil.rmtree(old, ignore_errors=True)
            root = os.path.join(here, "kit")
            os.makedirs(root)
            t0 = time.monotonic()
            _build_kit(root)
            print("kit built and installed in %.0f s, a service against each module: %s"
                  % (time.monotonic() - t0, root), flush=True)
            open(os.path.join(here, "ready"), "w").close()
    return {v: Kit(os.path.join(here, "kit"), v) for v in MODULES}


def other_kit():
    """The stats kit built from a copy of this tree whose billing.d has a
    team's own probe (coupon-apply feeding a new @@counter) and one more
    amount_minor bucket (tests/stats/statstest.variant_provider): "a
    service built from another billing.d".  Made once per state of the
    stock kits, beside them, under their lock; (Kit, its metric set)."""
    here = os.path.dirname(os.path.dirname(kits()["stats"].root))
    root = os.path.join(here, "other")
    with open(os.path.join(WORK, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(root, "ready")):
            shutil.rmtree(root, ignore_errors=True)
            source = os.path.join(root, "source")
            shutil.copytree(SOURCE_ROOT, source, symlinks=True,
                            ignore=lambda d, names: [n for n in names if d == SOURCE_ROOT and
                                                     (n.startswith("build") or n == ".git")])
            statstest.variant_provider(os.path.join(source, "provider"))
            t0 = time.monotonic()
            _build_kit(root, source)
            shutil.copytree(os.path.join(source, "provider"), os.path.join(root, "provider"))
            shutil.rmtree(source)
            print("kit other-stats built and installed in %.0f s: %s" % (time.monotonic() - t0, root), flush=True)
            open(os.path.join(root, "ready"), "w").close()
    kit = Kit(root, "stats")
    return kit, billing_d.parse(os.path.join(root, "provider", "billing.d")).metrics


def check_each_kit(check):
    """check(variant, kit) for every kit, each in its turn, then the verdict."""
    for variant, kit in sorted(kits().items()):
        with kit.turn():
            check(variant, kit)
    bt.finish()


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
            for probe, rows in doc["events"].items():  # a service of another billing.d has more
                events.setdefault(probe, [])
                events[probe] += [(doc["pid"], r[0], r[1], r[2:]) for r in rows]
        return cls(events, workers)

    def only(self, batches=None, pids=None):
        """The books of those batches and processes."""
        keep = {p: [e for e in rows if (batches is None or e[1] in batches) and (pids is None or e[0] in pids)]
                for p, rows in self.events.items()}
        return Books(keep, self.workers)

    def plus(self, other):
        """These books and OTHER's events (of other batches or processes)."""
        probes = set(self.events) | set(other.events)
        return Books({p: self.events.get(p, []) + other.events.get(p, []) for p in probes}, self.workers)

    def fires(self, probe):
        """[args] of every event of PROBE (D name)."""
        return [e[3] for e in self.events.get(probe, [])]

    def count(self):
        return sum(len(rows) for rows in self.events.values())


# --- what the books say a consumer must show -----------------------------------------

def expected_metrics(books, ms=None):
    """{(metric name, frozenset(labels)): value} of every metric billing.d
    (or metric set ms: another billing.d's) declares, from the books: the
    samples billing-exporter must serve (counters; histograms as _bucket
    per le, _count and _sum), whatever its source.  Read from billing.d's
    "@@" declarations, so no metric is restated here."""
    ms = ms or PROVIDER.metrics
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

#!/usr/bin/env python3
"""Exemplars and native histograms in one scrape: a real Prometheus started
with --enable-feature=native-histograms,exemplar-storage (what
docs/exporter.md and docs/slow-requests.md recommend, together) scrapes the
exporter in protobuf, stores the slow requests' IDs as exemplars and
answers histogram_quantile() from the native buckets, in one run.

    usage: test_exemplars_native.py path|trixie|sid

path: the prometheus on PATH (Debian 12's 2.42); trixie, sid: the one in
that Debian root the distros suite keeps (ROOTS/RELEASE/usr/bin/prometheus,
found as tests/distros/distrostest.py finds it; a Go program that needs
only libc, run here from there): 2.53 and Prometheus 3, skipped only when
that root is absent.

The books: known_latency writes BATCHES batches of log-normal durations (a
fixed seed, IDs above 2^32, none shared) into stats segments; the slow list
is every request over billing.d's 250 ms.  After each batch the test reads
the exemplars the exporter serves in OpenMetrics (which slow requests
become exemplars is the trail source's choice: trail_exemplars.c) and
waits for Prometheus to hold them, then checks:
- on billing_request_duration_seconds_bucket (Bucket.exemplar), exactly
  those the exporter served after each batch, some from every batch: each
  ID in the slow list, its value the books' duration, on the bucket that
  duration falls in;
- on the native series (Histogram.exemplars), the same, from Prometheus
  2.51 on; 2.42 reads a native series' exemplars only from classic buckets
  inside its message, where the exporter sends none, and stores none there;
- histogram_quantile(0.5, 0.9, 0.99) over the native series within one
  schema 6 bucket (2^(1/64) - 1) of the books' quantiles; the native count
  and sum exact; the classic series stored beside;
- each stored request's trail from `billing-probes slow --stats-dir DIR --id ID`.
A second job serves exemplar_exposition --protobuf (format_protobuf.c on
given requests, IDs up to 2^64 - 5): Prometheus stores each handler's
latest request on billing_requests_total (Counter.exemplar) and the latest
of each (handler, bucket) on its bucket, IDs in full."""
import http.server
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

BATCHES, PER_BATCH = 3, 3000
HANDLER = "exemplar.native"
SLOW_NS = 250 * 10**6   # billing.d's @@slow-threshold default
FIRST_ID = 2**32 + 1
QUANTILES = (0.5, 0.9, 0.99)
BUCKET_WIDTH = 2 ** (1 / 64) - 1  # schema 6
FEATURES = "native-histograms,exemplar-storage"
CACHE = os.environ.get("BILLING_PROBES_CACHE", "/var/cache/billing-probes")  # as tests/distros finds its roots


def prometheus_program(which):
    """The prometheus to run and its version (major, minor)."""
    if which == "path":
        bt.require_program("prometheus", "prometheus")
        exe = "prometheus"
    elif which in ("trixie", "sid"):
        exe = os.path.join(CACHE, "roots", which, "usr", "bin", "prometheus")
        if not os.access(exe, os.X_OK):
            bt.skip("no %s Prometheus here: %s is absent (the distros suite, tests/distros, builds the "
                    "root it comes from)" % (which, exe))
    else:
        print("usage: test_exemplars_native.py path|trixie|sid", file=sys.stderr)
        sys.exit(2)
    out = bt.run([exe, "--version"]).stdout
    m = re.search(r"version (\d+)\.(\d+)\.(\S+)", out)
    if not m:
        raise RuntimeError("%s --version says no version: %r" % (exe, out))
    print("Prometheus %s.%s.%s (%s)" % (m.group(1), m.group(2), m.group(3), exe))
    version = (int(m.group(1)), int(m.group(2)))
    if which == "sid" and version[0] < 3:
        raise RuntimeError("%s is Prometheus %d.%d, not 3 or later" % ((exe,) + version))
    return exe, version


exe, version = prometheus_program(sys.argv[1] if len(sys.argv) == 2 else "")
exporter_exe, tool = h.env_path("BX_EXPORTER"), h.env_path("BX_TOOL")
exposition_exe = h.env_path("BX_EXEMPLAR_EXPOSITION")
workload = os.environ.get("BX_KNOWN_LATENCY") or bt.skip("the stats writer is not built (-Dstats)")

rng = random.Random(20261128)
batches = [[min(max(int(rng.lognormvariate(math.log(0.025), 1.2) * 1e9), 10000), 60 * 10**9)
            for _ in range(PER_BATCH)] for _ in range(BATCHES)]
books = {}  # request ID: duration in ns
for b, durations in enumerate(batches):
    for k, ns in enumerate(durations):
        books[FIRST_ID + b * PER_BATCH + k] = ns
slow = {i for i, ns in books.items() if ns > SLOW_NS}
BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]  # billing.d's @@buckets


def le_of(seconds):
    """The upper bound of the classic bucket a duration is counted in (its
    le label's value: Prometheus 2.42 writes 1 as "1.0", the text "1")."""
    return next((b for b in BOUNDS if seconds <= b), math.inf)


def served(exporter):
    """{(ID, le)} the exporter serves on the handler's buckets in OpenMetrics."""
    headers, text = exporter.metrics(accept=h.PROMETHEUS_ACCEPT)
    if headers.get("Content-Type") != h.OPENMETRICS:
        raise RuntimeError("not OpenMetrics: %s" % headers.get("Content-Type"))
    return {(i, float(le)) for i, handler, le in h.exemplars(text) if handler == HANDLER}


# exemplar_exposition's requests (handler, seconds, ID) and what Prometheus keeps of them
GIVEN = [("checkout", 0.3, 2**32 + 7), ("checkout", 1.7, 2**40 + 3), ("checkout", 0.4, 2**33 + 1),
         ("refund", 0.02, 2**64 - 5)]
GIVEN_BUCKETS = {(str(2**33 + 1), "checkout", 0.5), (str(2**40 + 3), "checkout", 2.5),
                 (str(2**64 - 5), "refund", 0.025)}
GIVEN_COUNTERS = {(str(2**33 + 1), "checkout"), (str(2**64 - 5), "refund")}


class ProtobufExposition(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = subprocess.run([exposition_exe, "--protobuf"] + ["%s:%s:%d" % r for r in GIVEN],
                              capture_output=True, check=True, timeout=10).stdout
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                         "encoding=delimited")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def true_quantile(values, q):
    """The smallest value with at least q of them at or below it."""
    s = sorted(values)
    return s[math.ceil(q * len(s)) - 1]


def stored(prom, selector, with_le):
    """{(ID, le or None)} Prometheus holds for selector, each checked
    against the books as it is read."""
    found = set()
    for series in prom.exemplars(selector):
        le = float(series["seriesLabels"].get("le", "nan")) if with_le else None
        for e in series["exemplars"]:
            rid = e["labels"].get("request_id", "")
            ns = books.get(int(rid)) if rid.isdigit() else None
            if not (rid.isdigit() and int(rid) in slow and set(e["labels"]) == {"request_id"}
                    and float(e["value"]) == ns / 1e9 and (not with_le or le == le_of(ns / 1e9))):
                bt.check(False, "%s: exemplar %s on le=%s is a slow request of the books, with its duration "
                         "(books: %s ns)" % (selector, e, le, ns))
            found.add((rid, le))
    return found


stats_dir = tempfile.TemporaryDirectory(prefix="billing-exemplars-native-")
os.environ["BILLING_STATS_DIR"] = stats_dir.name
os.environ.pop("BILLING_STATS_SLOW", None)  # billing.d's thresholds: over 250 ms is slow
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ProtobufExposition)
threading.Thread(target=server.serve_forever, daemon=True).start()
prom = exporter = None
try:
    exporter = h.Exporter(exporter_exe, "--stats-dir", stats_dir.name)
    prom = h.Prometheus((), features=[FEATURES], exe=exe, scrape_configs=[
        {"job_name": name, "static_configs": [{"targets": ["127.0.0.1:%d" % port]}]}
        for name, port in (("billing-exporter", exporter.port), ("exposition", server.server_address[1]))])
    bt.wait_for("a scrape of both", lambda: len(prom.query("up == 1")) == 2, timeout=20)
    classic_sel = 'billing_request_duration_seconds_bucket{job="billing-exporter",handler="%s"}' % HANDLER
    native_sel = 'billing_request_duration_seconds{job="billing-exporter",handler="%s"}' % HANDLER
    want, waiting = set(), True  # what the exporter served, after each batch
    for b in range(BATCHES):
        r = bt.run([workload, HANDLER, str(FIRST_ID + b * PER_BATCH)],
                   input="\n".join(map(str, batches[b])) + "\n")
        bt.check(r.returncode == 0 and r.stdout.strip() == "%d requests" % PER_BATCH,
                 "batch %d: %d requests written, %d of them slow: %s %s"
                 % (b, PER_BATCH, sum(ns > SLOW_NS for ns in batches[b]), r.stdout.strip(), r.stderr.strip()))
        now = served(exporter)
        first = FIRST_ID + b * PER_BATCH
        bt.check(any(first <= int(i) < first + PER_BATCH for i, _ in now),
                 "batch %d: the exporter serves exemplars of it: %s" % (b, sorted(now)))
        want |= now
        try:
            if waiting:
                bt.wait_for("batch %d's exemplars in Prometheus" % b,
                            lambda: stored(prom, classic_sel, True) >= want, timeout=30)
        except RuntimeError as e:
            print("%s: the next batches without waiting" % e)
            waiting = False
    for name, health in sorted(prom.targets().items()):
        bt.check(health == ("up", ""), "%s scraped without error: %s" % (name, health))
    got = stored(prom, classic_sel, True)
    print("%d slow requests in the books; %d exemplars stored on the classic buckets: %s"
          % (len(slow), len(got), sorted(got, key=lambda x: (x[1], x[0]))))
    bt.check(got == want, "protobuf: the classic buckets hold exactly what the exporter served in OpenMetrics "
             "(%d, all in the slow list): missing %s, extra %s" % (len(want), sorted(want - got), sorted(got - want)))

    count = bt.wait_for("every request in the native histogram", lambda: (
        lambda c: c if c == len(books) else None)(prom.scalar("histogram_count(%s)" % native_sel)), timeout=20)
    bt.check(len(prom.query(native_sel)) == 1, "one native series for the handler (protobuf was negotiated)")
    bt.check(count == len(books), "native count: %s, the books %d" % (count, len(books)))
    got_sum, want_sum = prom.scalar("histogram_sum(%s)" % native_sel), sum(books.values()) / 1e9
    bt.check(got_sum is not None and abs(got_sum - want_sum) <= 1e-9 * want_sum,
             "native sum: %s s, the books %.9f s" % (got_sum, want_sum))
    for q in QUANTILES:
        truth = true_quantile(books.values(), q) / 1e9
        native = prom.scalar("histogram_quantile(%s, %s)" % (q, native_sel))
        classic = prom.scalar("histogram_quantile(%s, %s)" % (q, classic_sel))
        err = abs(native - truth) / truth if native is not None else math.inf
        print("p%g of %d requests: books %.6f s; native %s s (%.3f %%); classic %s s"
              % (100 * q, len(books), truth, native, 100 * err, classic))
        bt.check(err <= BUCKET_WIDTH * (1 + 1e-9), "native p%g within one schema 6 bucket (%.3f %%) of the books' "
                 "(%.3f %%)" % (100 * q, 100 * BUCKET_WIDTH, 100 * err))
    classic_count = prom.scalar('billing_request_duration_seconds_count{job="billing-exporter",handler="%s"}'
                                % HANDLER)
    bt.check(classic_count == len(books), "the classic series stored beside (count %s)" % classic_count)

    native_ids = stored(prom, native_sel, False)
    print("exemplars on the native series: %d" % len(native_ids))
    if version >= (2, 51):
        bt.check({i for i, _ in native_ids} == {i for i, _ in want},
                 "Prometheus %d.%d: the native series holds the same requests (Histogram.exemplars)" % version)
    else:
        bt.check(not native_ids, "Prometheus %d.%d: none on the native series, as docs/exporter.md says" % version)

    missing = []
    for i in sorted({i for i, _ in got}):
        r = bt.run([tool, "slow", "--stats-dir", stats_dir.name, "--id", i])
        if r.returncode != 0 or not re.search(r"^SLOW REQUEST %s %s " % (i, re.escape(HANDLER)), r.stdout, re.M):
            missing.append((i, r.returncode, r.stderr.strip()))
    bt.check(got and not missing, "each of the %d stored exemplars' requests has its trail: `billing-probes slow "
             "--stats-dir DIR --id ID`: missing %s" % (len(got), missing))

    def given_stored(family, with_le):
        return {(e["labels"]["request_id"], series["seriesLabels"]["handler"])
                + ((float(series["seriesLabels"]["le"]),) if with_le else ())
                for series in prom.exemplars('%s{job="exposition"}' % family) for e in series["exemplars"]}
    buckets = bt.wait_for("the given requests' exemplars", lambda: (
        lambda s: s if s >= GIVEN_BUCKETS else None)(given_stored("billing_request_duration_seconds_bucket", True)),
        timeout=20)
    bt.check(buckets == GIVEN_BUCKETS, "protobuf: each (handler, bucket)'s latest request on its bucket, "
             "IDs in full: %s" % sorted(buckets))
    counters = given_stored("billing_requests_total", False)
    bt.check(counters == GIVEN_COUNTERS, "protobuf: each handler's latest request on its counter "
             "(Counter.exemplar): %s" % sorted(counters))
finally:
    server.shutdown()
    if prom:
        prom.cleanup()
    if exporter:
        exporter.stop()
    stats_dir.cleanup()
bt.finish()

#!/usr/bin/env python3
"""Native histograms through a real Prometheus 2.42: known_latency writes
20,000 requests of log-normal durations (a fixed seed) into a stats
segment; the exporter serves them in the protobuf exposition when
Prometheus, started with --enable-feature=native-histograms, asks for it.
histogram_quantile(0.99) over the native series lands within 2 % of the
true p99 of the same durations (schema 6: a bucket is 2^(1/64) wide), the
classic buckets' p99 error printed beside it; the classic series are
stored too (the rules over _bucket keep working); the native count and sum
are exact; the payment amounts' native p99 is within their schema 5 bucket
(2^(1/32)).  Without the protobuf Accept the exposition is text, and a
malformed or partial protobuf Accept is text too."""
import math
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exporter_exe = h.env_path("BX_EXPORTER")
bt.require_program("prometheus", "prometheus")
workload = os.environ.get("BX_KNOWN_LATENCY") or bt.skip("the stats writer is not built (-Dstats)")

N = 20000
NATIVE_ERR_MAX = 0.02  # the native p99's error against the true one (docs/exporter.md)
HANDLER = "native.check"
PROTOBUF = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
PROTOBUF_ACCEPT = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;"
                   "q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2")  # Prometheus 2.42's, native-histograms on

rng = random.Random(20261127)
durations = [min(max(int(rng.lognormvariate(math.log(0.02), 0.9) * 1e9), 10000), 60 * 10**9) for _ in range(N)]
amounts = [d // 1000 for d in durations]  # known_latency: the duration's microseconds


def true_quantile(values, q):
    """The smallest value with at least q of them at or below it."""
    s = sorted(values)
    return s[math.ceil(q * len(s)) - 1]


def content_type(exporter, accept):
    _, headers, _ = h.http_get(exporter.url + "/metrics", {"Accept": accept})
    return headers.get("Content-Type")


stats_dir = tempfile.TemporaryDirectory(prefix="billing-native-")
os.environ["BILLING_STATS_DIR"] = stats_dir.name
prom = exporter = None
try:
    r = bt.run([workload, HANDLER], input="\n".join(map(str, durations)) + "\n")
    bt.check(r.returncode == 0 and r.stdout.strip() == "%d requests" % N, "known_latency fired %d requests: %s %s"
             % (N, r.stdout.strip(), r.stderr.strip()))
    exporter = h.Exporter(exporter_exe, "--stats-dir", stats_dir.name)
    bt.check(content_type(exporter, PROTOBUF_ACCEPT) == PROTOBUF, "protobuf when Prometheus asks for it")
    for what, accept in (("none", None), ("text", "text/plain;version=0.0.4"),
                         ("protobuf without encoding=delimited",
                          "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily"),
                         ("protobuf refused (q=0)", PROTOBUF_ACCEPT.replace("delimited;q=0.7", "delimited;q=0")),
                         ("garbage", "\x7f;;,,q=,application/vnd.google.protobuf")):
        got = content_type(exporter, accept) if accept else exporter.metrics()[0].get("Content-Type")
        bt.check(got == h.PROMETHEUS_TEXT, "Accept %s: text (%s)" % (what, got))

    prom = h.Prometheus((), features=["native-histograms"], scrape_configs=[
        {"job_name": "billing-exporter", "static_configs": [{"targets": ["127.0.0.1:%d" % exporter.port]}]}])
    sel = '{handler="%s"}' % HANDLER
    count = bt.wait_for("the native histogram in Prometheus",
                        lambda: prom.scalar("histogram_count(billing_request_duration_seconds%s)" % sel),
                        timeout=30)
    bt.check(count == N, "native count: %s, want %d" % (count, N))
    got_sum = prom.scalar("histogram_sum(billing_request_duration_seconds%s)" % sel)
    want_sum = sum(durations) / 1e9
    bt.check(got_sum is not None and abs(got_sum - want_sum) <= 1e-9 * want_sum,
             "native sum: %s s, want %.9f s" % (got_sum, want_sum))

    truth = true_quantile(durations, 0.99) / 1e9
    native = prom.scalar("histogram_quantile(0.99, billing_request_duration_seconds%s)" % sel)
    classic = bt.wait_for("the classic buckets beside it", lambda: prom.scalar(
        "histogram_quantile(0.99, billing_request_duration_seconds_bucket%s)" % sel), timeout=10)
    native_err = abs(native - truth) / truth
    classic_err = abs(classic - truth) / truth
    print("p99 of %d requests: true %.6f s; native %.6f s (error %.2f %%); classic %.6f s (error %.2f %%)"
          % (N, truth, native, 100 * native_err, classic, 100 * classic_err))
    bt.check(native_err <= NATIVE_ERR_MAX, "native p99 within %g %% of the true p99 (%.2f %%)" % (100 * NATIVE_ERR_MAX, 100 * native_err))
    classic_count = prom.scalar("billing_request_duration_seconds_count%s" % sel)
    bt.check(classic_count == N, "the classic series stored beside the native one (count %s)" % classic_count)

    asel = '{kind="payment",currency="EUR"}'
    acount = prom.scalar("histogram_count(billing_transaction_amount_minor%s)" % asel)
    bt.check(acount == N, "amounts' native count: %s, want %d" % (acount, N))
    atruth = true_quantile(amounts, 0.99)
    anative = prom.scalar("histogram_quantile(0.99, billing_transaction_amount_minor%s)" % asel)
    aerr = abs(anative - atruth) / atruth
    print("amount p99: true %d; native %.1f (error %.2f %%)" % (atruth, anative, 100 * aerr))
    bt.check(aerr <= 2 ** (1 / 32) - 1, "amounts' native p99 within one schema 5 bucket (%.2f %%)" % (100 * aerr))
finally:
    for x in (prom, exporter):
        if x:
            x.stop() if x is exporter else x.cleanup()
    stats_dir.cleanup()
bt.finish()

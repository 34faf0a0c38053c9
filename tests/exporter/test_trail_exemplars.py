#!/usr/bin/env python3
"""The exporter's exemplars from the real trail ring (trail_exemplars.c):
trail_burst writes slow requests (300 ms, IDs above 2^32) into stats
segments; the exporter's OpenMetrics carries, per handler, the latest
trail its writer kept for exemplars (the ring's kept lane: of a burst's
slow requests of one handler and bucket, the first) on le="0.5", the
bucket each fell in, with its ID in full, and Prometheus 2.42 with
--enable-feature=exemplar-storage returns them from
/api/v1/query_exemplars.  A later burst replaces its handler's exemplar
while the other handler's stays (read incrementally, kept across scrapes);
a Prometheus text scrape carries none; a segment the exporter refuses for
metrics (--uid of another user) gives none."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exporter_exe = h.env_path("BX_EXPORTER")
bt.require_program("prometheus", "prometheus")
burst = os.environ.get("BX_TRAIL_BURST") or bt.skip("the stats writer is not built (-Dstats)")


def run_burst(slow, fast, handler, first):
    """One thread's slow and fast requests (in turn, slow first: the first
    is the one its writer keeps) into the stats directory, IDs from first;
    that first one's ID."""
    r = bt.run([burst, "1", str(slow), str(fast), handler, str(first)])
    bt.check(r.returncode == 0, "trail_burst %s %s %s ran: %s" % (slow, fast, handler, r.stderr.strip()))
    return str(first)


def om_exemplars(exporter):
    headers, text = exporter.metrics(accept=h.PROMETHEUS_ACCEPT)
    bt.check(headers.get("Content-Type") == h.OPENMETRICS, "OpenMetrics: %s" % headers.get("Content-Type"))
    return h.exemplars(text)


stats_dir = tempfile.TemporaryDirectory(prefix="billing-trail-exemplars-")
os.environ["BILLING_STATS_DIR"] = stats_dir.name
os.environ.pop("BILLING_STATS_SLOW", None)  # billing.d's thresholds: 300 ms is slow
prom = exporter = refusing = None
try:
    authorize = run_burst(3, 2, "payment.authorize", 2**32 + 1)  # slow at k = 0, 2, 4: k = 0 kept
    invoice = run_burst(2, 0, "invoice.create", 2**33 + 1)
    want = {(authorize, "payment.authorize", "0.5"), (invoice, "invoice.create", "0.5")}
    exporter = h.Exporter(exporter_exe, "--stats-dir", stats_dir.name)
    got = om_exemplars(exporter)
    print("exemplars: %s" % sorted(got))
    bt.check(got == want, "each handler's kept slow request on le=\"0.5\", its ID in full: want %s"
             % sorted(want))
    _, text = exporter.metrics()
    bt.check(" # {" not in text and "# EOF" not in text, "a Prometheus text scrape carries no exemplar")

    prom = h.Prometheus((), features=["exemplar-storage"], scrape_configs=[
        {"job_name": "billing-exporter", "static_configs": [{"targets": ["127.0.0.1:%d" % exporter.port]}]}])
    stored = bt.wait_for("the exemplars in Prometheus",
                         lambda: (lambda s: s if s >= want else None)(h.stored_exemplars(prom)), timeout=20)
    print("query_exemplars: %s" % sorted(stored))
    bt.check(stored == want, "Prometheus returns each slow request's ID on its bucket")

    again = run_burst(1, 0, "payment.authorize", 2**34 + 1)
    got = om_exemplars(exporter)
    print("after a later burst: %s" % sorted(got))
    bt.check(got == {(again, "payment.authorize", "0.5"), (invoice, "invoice.create", "0.5")},
             "the later request replaces its handler's exemplar, the other handler's stays")

    refusing = h.Exporter(exporter_exe, "--stats-dir", stats_dir.name, "--uid", "65534")
    got = om_exemplars(refusing)
    bt.check(got == set(), "segments refused for metrics (--uid 65534) give no exemplar: %s" % sorted(got))
finally:
    for p in (prom,):
        if p:
            p.cleanup()
    for e in (exporter, refusing):
        if e:
            e.stop()
    stats_dir.cleanup()
bt.finish()

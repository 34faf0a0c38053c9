#!/usr/bin/env python3
"""OpenMetrics exemplars on billing_request_duration_seconds_bucket
(format.c, exemplars.h): the latest request of each (handler, bucket) given
to exemplar_exposition shows on the one bucket its duration falls in, with
its 64-bit ID in full, and each handler's latest on its
billing_requests_total; a source offering a request for every bucket is
refused on the others; and a real Prometheus 2.42 with
--enable-feature=exemplar-storage scrapes it without error and returns
those IDs from /api/v1/query_exemplars with each bucket's le, and the
counters' too.  The real
exporter (its stats path, an empty directory) answers Prometheus 2.42's
Accept with OpenMetrics that scrapes without error, and Prometheus text
to a scraper without OpenMetrics or refusing it (q=0)."""
import http.server
import os
import re
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exe, exporter_exe = h.env_path("BX_EXEMPLAR_EXPOSITION"), h.env_path("BX_EXPORTER")
bt.require_program("prometheus", "prometheus")
fire_stats = os.environ.get("BX_FIRE_STATS") or bt.skip("the stats writer is not built (-Dstats)")

# (handler, seconds, request ID): IDs above 2^32, one near 2^64
REQUESTS = [("checkout", 0.3, 2**32 + 7), ("checkout", 1.7, 2**40 + 3),
            ("checkout", 0.4, 2**33 + 1), ("refund", 0.02, 2**64 - 5)]
# the latest per (handler, bucket): 0.4 replaces 0.3 in le="0.5"
WANT = {(str(2**33 + 1), "checkout", "0.5"), (str(2**40 + 3), "checkout", "2.5"),
        (str(2**64 - 5), "refund", "0.025")}
# and per handler, on its counter
WANT_COUNTERS = {(str(2**33 + 1), "checkout"), (str(2**64 - 5), "refund")}
COUNTER_EXEMPLAR = re.compile(r'^billing_requests_total\{handler="([^"]*)",status="0"\} \S+ '
                              r'# \{request_id="(\d+)"\} \S+ \S+$')
OPENMETRICS, PROMETHEUS_TEXT, PROMETHEUS_ACCEPT = h.OPENMETRICS, h.PROMETHEUS_TEXT, h.PROMETHEUS_ACCEPT
exemplars = h.exemplars


args = ["%s:%s:%d" % r for r in REQUESTS]
text = bt.run([exe] + args).stdout
print("exemplars: %s" % sorted(exemplars(text)))
bt.check(exemplars(text) == WANT, "each latest request on its own bucket")
bt.check(text.endswith("# EOF\n") and text.count("# EOF") == 1, "OpenMetrics ends with one # EOF")
counters = {(m.group(2), m.group(1)) for m in map(COUNTER_EXEMPLAR.match, text.splitlines()) if m}
bt.check(counters == WANT_COUNTERS, "each handler's latest request on its counter: %s" % sorted(counters))
anywhere = exemplars(bt.run([exe, "--any-bucket"] + args).stdout)
bt.check(anywhere == {(str(2**33 + 1), "checkout", "0.5"), (str(2**64 - 5), "refund", "0.025")},
         "a request offered for every bucket shows only on its own: %s" % sorted(anywhere))


class Exposition(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = bt.run([exe] + args).stdout.encode()
        self.send_response(200)
        self.send_header("Content-Type", OPENMETRICS)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def job(name, port):
    return {"job_name": name, "static_configs": [{"targets": ["127.0.0.1:%d" % port]}]}


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exposition)
threading.Thread(target=server.serve_forever, daemon=True).start()
stats_dir = tempfile.TemporaryDirectory(prefix="billing-exemplars-")
os.environ["BILLING_STATS_DIR"] = stats_dir.name
prom = exporter = prog = None
try:
    prog = h.FireProgram(fire_stats, "threads", "2", "50")
    fired = prog.fired(timeout=60)
    exporter = h.Exporter(exporter_exe, "--stats-dir", stats_dir.name)
    headers, om = exporter.metrics(accept=PROMETHEUS_ACCEPT)
    bt.check(headers.get("Content-Type") == OPENMETRICS and om.endswith("# EOF\n"),
             "the exporter answers Prometheus's Accept with OpenMetrics: %s" % headers.get("Content-Type"))
    for accept in (None, "application/openmetrics-text;q=0,text/plain;version=0.0.4"):
        headers, text = exporter.metrics(accept=accept)
        bt.check(headers.get("Content-Type") == PROMETHEUS_TEXT and "# EOF" not in text
                 and " # {" not in text, "Accept %r: Prometheus text, no exemplar" % accept)

    prom = h.Prometheus((), features=["exemplar-storage"],
                        scrape_configs=[job("exposition", server.server_address[1]),
                                        job("billing-exporter", exporter.port)])
    bt.wait_for("both scraped", lambda: len(prom.query("up == 1")) == 2, timeout=20)
    for name, health in sorted(prom.targets().items()):
        bt.check(health == ("up", ""), "%s scraped without error: %s" % (name, health))
    counted = prom.scalar('sum(billing_requests_total{job="billing-exporter"})')
    observed = prom.scalar('sum(billing_request_duration_seconds_count{job="billing-exporter"})')
    bt.check(counted == fired["request_done"] and observed == counted,
             "the OpenMetrics scrape has every request: %s counted, %s observed, %d fired"
             % (counted, observed, fired["request_done"]))

    def stored():
        found = h.stored_exemplars(prom)
        return found if found >= WANT else None
    got = bt.wait_for("the exemplars in Prometheus", stored, timeout=20)
    print("query_exemplars: %s" % sorted(got))
    bt.check(got == WANT, "Prometheus returns each ID on its bucket")
    counted = {(e["labels"]["request_id"], s["seriesLabels"]["handler"])
               for s in prom.exemplars('billing_requests_total{job="exposition"}') for e in s["exemplars"]}
    bt.check(counted == WANT_COUNTERS, "and each handler's latest on its counter: %s" % sorted(counted))
finally:
    if prom:
        prom.cleanup()
    if exporter:
        exporter.stop()
    if prog:
        prog.release()
    server.shutdown()
    stats_dir.cleanup()
bt.finish()

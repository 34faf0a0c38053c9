#!/usr/bin/env python3
"""OpenMetrics exemplars on billing_request_duration_seconds_bucket
(format.c, exemplars.h): the latest request of each (handler, bucket) given
to exemplar_exposition shows on the one bucket its duration falls in, with
its 64-bit ID in full; a source offering a request for every bucket is
refused on the others; and a real Prometheus 2.42 with
--enable-feature=exemplar-storage scrapes it without error and returns
those IDs from /api/v1/query_exemplars with each bucket's le."""
import http.server
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exe = h.env_path("BX_EXEMPLAR_EXPOSITION")
bt.require_program("prometheus", "prometheus")

# (handler, seconds, request ID): IDs above 2^32, one near 2^64
REQUESTS = [("checkout", 0.3, 2**32 + 7), ("checkout", 1.7, 2**40 + 3),
            ("checkout", 0.4, 2**33 + 1), ("refund", 0.02, 2**64 - 5)]
# the latest per (handler, bucket): 0.4 replaces 0.3 in le="0.5"
WANT = {(str(2**33 + 1), "checkout", "0.5"), (str(2**40 + 3), "checkout", "2.5"),
        (str(2**64 - 5), "refund", "0.025")}
EXEMPLAR = re.compile(r'^\S+\{handler="([^"]*)",le="([^"]*)"\} \S+ # \{request_id="(\d+)"\} \S+ \S+$')
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def exemplars(text):
    """{(request ID, handler, le)} of the bucket lines with an exemplar."""
    return {(m.group(3), m.group(1), m.group(2))
            for m in map(EXEMPLAR.match, text.splitlines()) if m}


args = ["%s:%s:%d" % r for r in REQUESTS]
text = bt.run([exe] + args).stdout
print("exemplars: %s" % sorted(exemplars(text)))
bt.check(exemplars(text) == WANT, "each latest request on its own bucket")
bt.check(text.endswith("# EOF\n") and text.count("# EOF") == 1, "OpenMetrics ends with one # EOF")
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


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exposition)
threading.Thread(target=server.serve_forever, daemon=True).start()
prom = None
try:
    prom = h.Prometheus(["127.0.0.1:%d" % server.server_address[1]], features=["exemplar-storage"])
    bt.wait_for("a scrape", lambda: prom.scalar("up") == 1, timeout=20)
    health = prom.targets()["billing-exporter"]
    bt.check(health == ("up", ""), "scraped without error: %s" % (health,))

    def stored():
        found = set()
        for series in prom.exemplars("billing_request_duration_seconds_bucket"):
            labels = series["seriesLabels"]
            for e in series["exemplars"]:
                found.add((e["labels"]["request_id"], labels["handler"], labels["le"]))
        return found if found >= WANT else None
    got = bt.wait_for("the exemplars in Prometheus", stored, timeout=20)
    print("query_exemplars: %s" % sorted(got))
    bt.check(got == WANT, "Prometheus returns each ID on its bucket")
finally:
    if prom:
        prom.cleanup()
    server.shutdown()
bt.finish()

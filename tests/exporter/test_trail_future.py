#!/usr/bin/env python3
"""A trail time-stamped in the year 2100 (issue 46, finding 7): a
segment's trails of handler "checkout" (300 ms, bucket le="0.5") are
rewritten to end on 2100-01-01, as a broken or hostile writer could.
billing-exporter bounds trail times by its own clock: no exemplar ends
past it, and a later slow request of that handler and bucket, from
another process, is its exemplar at the next scrape.  On the code before
this test the 2100 trail is served, and pins its bucket until the exporter
restarts."""
import os
import re
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exporter_exe = h.env_path("BX_EXPORTER")
burst = os.environ.get("BX_TRAIL_BURST") or bt.skip("the stats writer is not built (-Dstats)")
FIRST = 2**32 + 1  # trail_burst's first request ID (one thread)
YEAR_2100_NS = 4102444800 * 10**9
EXEMPLAR = re.compile(r'^billing_request_duration_seconds_bucket\{handler="checkout",le="([^"]*)"\} \S+ '
                      r'# \{request_id="(\d+)"\} \S+ (\S+)$', re.M)


def run_burst(slow):
    """One thread's slow requests of handler checkout; its segment."""
    r = bt.run([burst, "1", str(slow), "0", "checkout"])
    bt.check(r.returncode == 0, "trail_burst 1 %d 0 checkout ran: %s" % (slow, r.stderr.strip()))
    return r.stdout.strip()


def end_in_2100(path, ids):
    """Every trail record of path holding one of ids ends in 2100: the
    record's sequence number (even, not 0) before its request ID, its end
    three words after."""
    data = bytearray(open(path, "rb").read())
    patched = 0
    for rid in ids:
        at = data.find(struct.pack("<Q", rid))
        while at >= 0:
            seq = struct.unpack_from("<Q", data, at - 8)[0] if at >= 8 else 0
            if at % 8 == 0 and seq and seq % 2 == 0:
                struct.pack_into("<Q", data, at + 24, YEAR_2100_NS)
                patched += 1
            at = data.find(struct.pack("<Q", rid), at + 1)
    with open(path, "r+b") as f:
        f.write(data)
    return patched


def checkout_exemplars(exporter):
    """[(le, request ID, timestamp)] of handler checkout, OpenMetrics."""
    _, text = exporter.metrics(accept=h.PROMETHEUS_ACCEPT)
    return [(m.group(1), m.group(2), float(m.group(3))) for m in EXEMPLAR.finditer(text)]


stats_dir = tempfile.TemporaryDirectory(prefix="billing-trail-future-")
os.environ["BILLING_STATS_DIR"] = stats_dir.name
os.environ.pop("BILLING_STATS_SLOW", None)  # billing.d's thresholds: 300 ms is slow
exporter = None
try:
    hostile = run_burst(2)
    n = end_in_2100(hostile, [FIRST, FIRST + 1])
    bt.check(n >= 2, "the two trails rewritten to end in 2100 (%d records)" % n)
    exporter = h.Exporter(exporter_exe, "--stats-dir", stats_dir.name)
    got = checkout_exemplars(exporter)
    print("exemplars of checkout: %s" % got)
    bt.check(all(ts <= time.time() + 60 for _, _, ts in got),
             "no exemplar ends past the exporter's clock: %s" % got)

    before = time.time()
    run_burst(1)
    got = checkout_exemplars(exporter)
    print("after a later slow request: %s" % got)
    bt.check(len(got) == 1 and got[0][0] == "0.5" and before - 5 <= got[0][2] <= time.time() + 5,
             "the later slow request is the bucket's exemplar, at its own time: %s" % got)
finally:
    if exporter:
        exporter.stop()
    stats_dir.cleanup()
bt.finish()

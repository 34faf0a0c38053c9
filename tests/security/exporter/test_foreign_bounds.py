#!/usr/bin/env python3
"""A family a segment describes with more buckets than the exporter
serves is refused in one line, never copied past the exporter's room for
bounds.  A stats segment may describe up to BS_LAYOUT_BOUNDS bounds per
quantity (tools/stats-reader/stats_layout.h), the exporter holds BX_MAX_BOUNDS
(tools/billing-exporter/common/metric_table.h).  Before, a family the
tables do not name, observing a quantity of more, had its bounds written
past its quantity's array, over the fields after it: the exporter then
grew an array at a pointer made of a bound's text, and died.

A segment of another billing.d (the stats tests' variant, with a team's
probe whose histogram has 40 buckets) is read from its directory.  That
family is one line and not served; the rest of the segment is (the coupon
counter the variant adds), and the exporter keeps serving."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "stats"))
from sectest import bt, h  # noqa: E402
import statstest as stt  # noqa: E402

exe = h.env_path("BX_EXPORTER")
BOUNDS = 40
FORGED = "billing_forged_seconds"
PROBE = """\t/**
\t * forged-thing: a team's probe whose histogram has %d buckets.
\t * @where where it happened
\t * @forged_ms how long it took
\t * @@group business
\t * @@histogram %s observe(forged_ms) {where}
\t *     How long forged things took.
\t */
\tprobe forged__thing(char *, unsigned long long);

""" % (BOUNDS, FORGED)


def provider(directory):
    """The variant billing.d, with forged-thing and its quantity of BOUNDS bounds."""
    path = stt.variant_provider(directory)
    text = open(path, encoding="utf-8").read()
    native, anchor = " * @@native amount_minor ", "\t/**\n\t * error: "
    line = next(l for l in text.splitlines() if l.startswith(native)) + "\n"
    quantity = " * @@quantity forged_ms unit=seconds divide=1000\n * @@buckets forged_ms %s\n" % " ".join(
        str(k + 1) for k in range(BOUNDS))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(line, line + quantity, 1).replace(anchor, PROBE + anchor, 1))
    return path


with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
    os.chmod(tmp, 0o755)
    ms = stt.billing_d.parse(provider(tmp)).metrics
    bt.check(len(ms.quantities["forged_ms"].bounds_raw) == BOUNDS, "the variant's forged_ms has %d bounds" % BOUNDS)
    rows = {"coupon__apply": [(["spring"], [7])],
            "forged__thing": [(["here"], [BOUNDS + 1, BOUNDS + 1, 12345] + [1] * (BOUNDS + 1))]}
    d = os.path.join(tmp, "stats")
    os.mkdir(d, 0o755)
    stt.write_segment(os.path.join(d, "%d.stats" % os.getpid()), ms, rows)
    ex = h.Exporter(exe, "--stats-dir", d, "--metrics", "all")
    try:
        _, text = ex.metrics()
        _, om = ex.metrics(accept="application/openmetrics-text; version=1.0.0")
        alive = ex.proc.poll() is None
    finally:
        rc, log = ex.stop()

said = [line for line in log.splitlines() if "family %s " % FORGED in line and "not served" in line]
bt.check(alive and rc == 0, "the exporter serves on after reading the segment, and exits 0 (%s)" % rc)
bt.check(len(said) == 1 and "more buckets" in said[0], "%s is refused in one line (%s)" % (FORGED, said or "no line"))
bt.check(FORGED not in text + om, "nothing of %s is served" % FORGED)
bt.check(h.total(h.parse_exposition(text), "billing_coupons_applied_total", campaign="spring") == 7,
         "the segment's other families are served: billing_coupons_applied_total{campaign=\"spring\"} 7")
bt.finish()

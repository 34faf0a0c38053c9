#!/usr/bin/env python3
"""The trail outlives the exemplar (issue 45, requirement 3), as a soak on
a clock compressed sixty times: a second here is a minute of the soak.

A service serves 4 slow requests a second (here 240, with as many fast
ones: trail_pace.c) over three handlers and five duration buckets, its
trails kept for exemplars for 15 minutes (BILLING_STATS_SLOW_KEEP=15s);
billing-exporter serves them and a real Prometheus with exemplar storage
scrapes it every 15 s (250 ms).  After 37.5 minutes (the kept lane has
wrapped), every exemplar Prometheus holds for the last 15 minutes is
looked up with `billing-probes slow --id ID --stats-dir DIR`: at least 99 %
must resolve (the lane's rule makes it all of them).  Prints the figure.
On the code before this test, `slow` has no --id, and its ring held the
last 128 trails: 32 s of the soak."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exporter_exe = h.env_path("BX_EXPORTER")
tool = h.env_path("BX_TOOL")
bt.require_program("prometheus", "prometheus")
pace = os.environ.get("BX_TRAIL_PACE") or bt.skip("the stats writer is not built (-Dstats)")

SPEED = 60                  # the compressed clock: one second is a minute of the soak
SLOW_RATE = 4 * SPEED       # slow requests a second: 4 a second of the soak
WINDOW = 15 * 60 / SPEED    # s: the 15 minutes a person has to click an exemplar
SCRAPE = 15.0 / SPEED       # s: a 15 s scrape interval
RUN = 2.5 * WINDOW          # the kept lane wraps (at most 256 trails in a window)
MINIMUM = 0.99

stats_dir = tempfile.TemporaryDirectory(prefix="billing-trail-soak-")
os.environ["BILLING_STATS_DIR"] = stats_dir.name
os.environ["BILLING_STATS_SLOW_KEEP"] = "%ds" % WINDOW
os.environ.pop("BILLING_STATS_SLOW", None)  # billing.d's 250 ms
prom = exporter = None
try:
    exporter = h.Exporter(exporter_exe, "--stats-dir", stats_dir.name)
    prom = h.Prometheus((), features=["exemplar-storage"], scrape_configs=[{
        "job_name": "billing-exporter", "scrape_interval": "%dms" % (SCRAPE * 1000),
        "scrape_timeout": "%dms" % (SCRAPE * 800),
        "static_configs": [{"targets": ["127.0.0.1:%d" % exporter.port]}]}])
    r = bt.run([pace, str(SLOW_RATE), str(RUN)], timeout=RUN + 60)
    bt.check(r.returncode == 0, "trail_pace %d/s for %.1f s ran: %s" % (SLOW_RATE, RUN, r.stderr.strip()))
    time.sleep(2 * SCRAPE)  # the last trails scraped
    now = time.time()
    ids = set()
    for series in prom.exemplars("billing_request_duration_seconds_bucket", since=WINDOW):
        for e in series["exemplars"]:
            if now - WINDOW <= float(e["timestamp"]) <= now:
                ids.add(e["labels"]["request_id"])
    resolved = missing = 0
    for rid in sorted(ids):
        p = subprocess.run([tool, "slow", "--stats-dir", stats_dir.name, "--id", rid], capture_output=True,
                           text=True, timeout=60)
        if p.returncode == 0 and ("SLOW REQUEST %s " % rid) in p.stdout:
            resolved += 1
        elif missing < 3:
            missing += 1
            print("not resolved: %s (%d, %s)" % (rid, p.returncode, p.stderr.strip()[:200]))
    share = resolved / len(ids) if ids else 0
    recent = bt.run([tool, "slow", "--stats-dir", stats_dir.name]).stdout
    in_recent = sum(1 for rid in ids if ("SLOW REQUEST %s " % rid) in recent)
    print("soak: %d exemplars held by Prometheus for the last 15 (compressed) minutes, %d resolve with slow --id "
          "(%.1f %%), %d of them in the last 128 slow trails alone; %d slow requests a second (4 a soak second), "
          "keep %g s, scrape %g s" % (len(ids), resolved, 100 * share, in_recent, SLOW_RATE, WINDOW, SCRAPE))
    bt.check(len(ids) >= 50, "Prometheus holds exemplars of the last 15 minutes: %d" % len(ids))
    bt.check(share >= MINIMUM, "at least 99 %% of them resolve with slow --id: %.1f %%" % (100 * share))
finally:
    if prom:
        prom.cleanup()
    if exporter:
        exporter.stop()
    stats_dir.cleanup()
bt.finish()

#!/usr/bin/env python3
"""A target carrying only some probes (no db, gateway or transaction
probes): the exporter starts with every group on, says in one line per
missing probe that it skipped it, and counts what is there."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")

_, s, text, _ = h.fire_and_scrape(exe, fire, ["threads", "2", "500"], ["--metrics", "all"])

for probe in ("db__query__done", "gateway__call__done", "transaction__done"):
    lines = [l for l in text.splitlines() if probe in l]
    bt.check(len(lines) == 1 and "skipped" in lines[0], "one line for missing %s: %s" % (probe, lines))
    bt.check(h.total(s, "billing_exporter_probes_attached", probe=probe) == 0,
             "%s attached nowhere" % probe)
bt.check(h.total(s, "billing_requests_total", handler="threads.same") == 1000, "request-done counted")
bt.check(h.total(s, "billing_payments_total") == 1000, "payment-auth counted")
bt.finish()

#!/usr/bin/env python3
"""A target carrying only some probes (no db, gateway or transaction
probes): the exporter starts with every group on, says in one line per
missing probe that it skipped it, and counts what is there; and its
inventory (billing_exporter_target_build_info) names what the target carries:
exactly the probes `billing-probes list PID` shows, hashed by name."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe, fire, tool = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC"), h.env_path("BX_TOOL")


def fnv1a(text):
    v = 1469598103934665603
    for c in text.encode():
        v = ((v ^ c) * 1099511628211) % (1 << 64)
    return "%016x" % v


carried = set(re.findall(r"^\s*billing\s+(\w+)\s", subprocess.run([tool, "list", fire], capture_output=True,
                                                                  text=True).stdout, flags=re.M))
_, s, text, _ = h.fire_and_scrape(exe, fire, ["threads", "2", "500"], ["--metrics", "all"])
info = [dict(k[1]) for k in s if k[0] == "billing_exporter_target_build_info"]
want = {"source": "usdt", "probes": str(len(carried)), "probe_set": fnv1a("".join(p + "\n" for p in sorted(carried)))}
bt.check(carried and len(info) == 1 and {k: info[0].get(k) for k in want} == want and info[0]["target"].startswith("pid:"),
         "billing_exporter_target_build_info: the target's %d probes (billing-probes list) and their hash: %s, want %s"
         % (len(carried), info, want))
own = [dict(k[1]) for k in s if k[0] == "billing_exporter_build_info"]
bt.check(len(own) == 1 and re.fullmatch(r"[0-9a-f]{16}", own[0].get("probe_set", "")) and own[0].get("version"),
         "billing_exporter_build_info: version and probe set (%s)" % own)

for probe in ("db__query__done", "gateway__call__done", "transaction__done"):
    lines = [l for l in text.splitlines() if probe in l]
    bt.check(len(lines) == 1 and "skipped" in lines[0], "one line for missing %s: %s" % (probe, lines))
    bt.check(h.total(s, "billing_exporter_probes_attached", probe=probe) == 0,
             "%s attached nowhere" % probe)
bt.check(h.total(s, "billing_requests_total", handler="threads.same") == 1000, "request-done counted")
bt.check(h.total(s, "billing_payments_total") == 1000, "payment-auth counted")
bt.finish()

#!/usr/bin/env python3
"""monitoring/: the rules pass `promtool check rules` and their unit tests
(`promtool test rules`), the example prometheus.yml passes `promtool
check config`, and the dashboard is JSON whose every panel has a query."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

promtool = bt.require_program("promtool", "prometheus")
mon = h.MONITORING


def promtool_ok(*args):
    p = bt.run([promtool, *args], cwd=mon)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


ok, out = promtool_ok("check", "rules", "rules/billing.rules.yml")
bt.check(ok, "promtool check rules: " + out.splitlines()[-1])
ok, out = promtool_ok("test", "rules", "tests/billing.rules.test.yml")
bt.check(ok, "promtool test rules: " + out.replace("\n", " | "))
ok, out = promtool_ok("check", "config", "prometheus.yml")
bt.check(ok, "promtool check config prometheus.yml")

dash = json.load(open(os.path.join(mon, "grafana", "billing-dashboard.json")))
panels = dash["panels"]
bt.check(len(panels) >= 8, "dashboard has its panels (%d)" % len(panels))
for p in panels:
    bt.check(p.get("targets") and all(t.get("expr") for t in p["targets"]),
             "panel %r has PromQL" % p["title"])
bt.finish()

#!/usr/bin/env python3
"""monitoring/: the rules pass `promtool check rules` and their unit tests
(`promtool test rules`), the example prometheus.yml passes `promtool
check config`, and the dashboard is JSON whose every panel has a query
and whose latency panels show exemplars.
The unit tests hold, for every shipped alert, a case where it fires, and
a fresh start over at least an hour where no alert is even pending; a new
job whose every request is slow pages within minutes (the latency alerts
need no hour of history); no rule names a job.  Every alert carries a
runbook_url naming a heading of its page (docs/runbook.md), a section
that holds commands."""
import json
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "exporter"))
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
rules = yaml.safe_load(open(os.path.join(mon, "rules", "billing.rules.yml")))
alerts = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
bt.check(not [e for e in exprs if re.search(r"\bjob\s*=~?", e)],
         "no rule selects a job by name (the exporter's scrape targets carry billing_probes=\"exporter\")")
cases = yaml.safe_load(open(os.path.join(mon, "tests", "billing.rules.test.yml")))["tests"]
fires = {t["alertname"] for c in cases for t in c.get("alert_rule_test", []) if t.get("exp_alerts")}
bt.check(set(alerts) <= fires, "every alert has a case where it fires (missing: %s)"
         % (", ".join(sorted(set(alerts) - fires)) or "none"))


def minutes(duration):
    return sum(int(n) * {"h": 60, "m": 1}[u] for n, u in re.findall(r"(\d+)([hm])", duration))


quiet = [minutes(t["eval_time"]) for c in cases if c["name"].startswith("fresh start")
         for t in c.get("promql_expr_test", [])
         if t["expr"].startswith("count_over_time(ALERTS[") and t.get("exp_samples") == []]
bt.check(quiet and max(quiet) >= 60, "a fresh start holds no pending or firing alert for %s min (at least 60)"
         % (max(quiet) if quiet else 0))

# The latency page for a new job: a case named "a new job, ..." whose
# BurnFast fires within 15 minutes of its first sample.
new_job = [minutes(t["eval_time"]) for c in cases if c["name"].startswith("a new job")
           for t in c.get("alert_rule_test", [])
           if t["alertname"] == "BillingRequestLatencyBudgetBurnFast" and t.get("exp_alerts")]
bt.check(new_job and min(new_job) <= 15, "a new job whose requests are slow pages within %s min (at most 15)"
         % (min(new_job) if new_job else "no"))

# Every alert's runbook: a heading of its page, whose section holds commands.
sys.path.insert(0, os.path.join(h.SOURCE_ROOT, "tests", "docs"))
from test_links import slug  # noqa: E402

for r in (r for g in rules["groups"] for r in g["rules"] if "alert" in r):
    url = r.get("annotations", {}).get("runbook_url", "")
    path, _, anchor = url.partition("#")
    page = os.path.join(h.SOURCE_ROOT, path)
    text = open(page, encoding="utf-8").read() if path and os.path.isfile(page) else ""
    heads = [m for m in re.finditer(r"(?m)^(#+) (.*)$", text) if slug(m.group(2)) == anchor]
    section = ""
    if heads:
        rest = text[heads[0].end():]
        end = re.search(r"(?m)^#{1,%d} " % len(heads[0].group(1)), rest)
        section = rest[:end.start() if end else len(rest)]
    bt.check(heads and ("```sh" in section or "`billing-probes " in section),
             "%s: runbook_url %r names a heading of %s, with commands" % (r["alert"], url, path or "no page"))

ok, out = promtool_ok("check", "config", "prometheus.yml")
bt.check(ok, "promtool check config prometheus.yml")

dash = json.load(open(os.path.join(mon, "grafana", "billing-dashboard.json")))
panels = dash["panels"]
bt.check(len(panels) >= 8, "dashboard has its panels (%d)" % len(panels))
for p in panels:
    bt.check(p.get("targets") and all(t.get("expr") for t in p["targets"]),
             "panel %r has PromQL" % p["title"])
latency = [p for p in panels if any("billing_request_duration_seconds_bucket" in t["expr"] for t in p["targets"])]
bt.check(latency and all(any(t.get("exemplar") is True for t in p["targets"]) for p in latency),
         "the latency panels query exemplars (a target with \"exemplar\": true): %s"
         % [p["title"] for p in latency])
bt.finish()

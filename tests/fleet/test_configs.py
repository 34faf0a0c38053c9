#!/usr/bin/env python3
"""The fleet recipe's files as the engines read them: the per-host agent
config (promtool check config --agent), the central config with both rule
files, the Kubernetes Prometheus config with its service discovery
(--syntax-only: its CA and password files are the cluster's Secrets), the
clustered Alertmanagers' routes (amtool check-config, and a host's alert
routed to the on-call receiver, grouped by its host), the fleet rules
(promtool check rules, test rules)."""
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import billingtest as bt  # noqa: E402

promtool = bt.require_program("promtool", "prometheus")
amtool = bt.require_program("amtool", "prometheus-alertmanager")
FLEET = os.path.join(ROOT, "deploy", "fleet")
MON = os.path.join(ROOT, "monitoring")


def ok(cmd, what, want=""):
    r = bt.run(cmd, timeout=120)
    out = r.stdout + r.stderr
    bt.check(r.returncode == 0 and want in out, "%s (rc %d%s)" % (what, r.returncode,
             "" if r.returncode == 0 else ": " + out.strip()[-400:]))
    return out


ok([promtool, "check", "config", "--agent", os.path.join(FLEET, "agent.yml")], "agent.yml: a valid agent config")
ok([promtool, "check", "config", os.path.join(FLEET, "central.yml")],
   "central.yml: valid, with billing.rules.yml and fleet.rules.yml", "SUCCESS: 2 rule files found")
ok([promtool, "check", "config", "--syntax-only", os.path.join(ROOT, "deploy", "kubernetes", "prometheus", "prometheus.yml")],
   "deploy/kubernetes/prometheus/prometheus.yml: valid, discovering the exporters")
ok([amtool, "check-config", os.path.join(FLEET, "alertmanager.yml")], "alertmanager.yml: valid")
am = os.path.join(FLEET, "alertmanager.yml")
out = ok([amtool, "config", "routes", "test", "--config.file", am, "--verify.receivers=billing-oncall",
          "alertname=BillingExporterDown", "service=billingd", "host=h2", "severity=page"],
         "a page about one host of billingd goes to billing-oncall")
out = ok([amtool, "config", "routes", "test", "--config.file", am, "--verify.receivers=billing-tickets",
          "alertname=BillingInvoiceRateDrop", "service=billingd", "host=h2", "severity=ticket"],
         "a ticket about billingd goes to billing-tickets")
ok([promtool, "check", "rules", os.path.join(MON, "rules", "fleet.rules.yml")], "fleet.rules.yml: valid rules")
r = bt.run([promtool, "test", "rules", "fleet.rules.test.yml"], timeout=120, cwd=os.path.join(MON, "tests"))
bt.check(r.returncode == 0, "fleet.rules.test.yml: the fleet view adds hosts up; BillingHostSilent pages for a "
         "silent host only (rc %d %s)" % (r.returncode, (r.stdout + r.stderr).strip()[-600:]))
bt.finish()

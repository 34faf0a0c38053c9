#!/usr/bin/env python3
"""The fleet recipe's files as the engines read them: the per-host agent
config (promtool check config --agent), the central config with both rule
files, both web configs (promtool check web-config), the Kubernetes
Prometheus config with its service discovery (--syntax-only: its CA and
password files are the cluster's Secrets), the clustered Alertmanagers'
routes (amtool check-config, and a host's alert routed to the on-call
receiver, grouped by its host), the fleet rules (promtool check rules,
test rules).  The recipe's files name certificates and password files
beside them (relative paths): they are checked in a copy of the folder
with certificates and passwords of the test's own, as an operator
installs them.  Each command line the files' headers give keeps every
port guarded (fleettest.recipe_command): the central Prometheus and the
Alertmanagers with --web.config.file, the gossip with --cluster.tls-config
on a given address, the agent's own port on loopback."""
import os
import shutil
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import billingtest as bt  # noqa: E402
try:
    import yaml
except ImportError:
    bt.skip("PyYAML is not installed (python3-yaml; tests/install-deps.sh installs it)")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleettest as ft  # noqa: E402

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


# The folder as installed: certificates and passwords beside the files
# (monitoring/ two levels up, as central.yml's rule_files say).
tmp = tempfile.mkdtemp(prefix="fleet-configs-")
installed = os.path.join(tmp, "deploy", "fleet")
shutil.copytree(FLEET, installed)
shutil.copytree(MON, os.path.join(tmp, "monitoring"))
pki = ft.Pki(tmp)
pki.ca("fleet-ca")
pki.ca("cluster-ca")
for name, as_name in (("central", "central"), ("alertmanager", "alertmanager")):
    pki.leaf(name, "fleet-ca", ["DNS:%s.example" % name])
    pki.install(name, installed, as_name)
pki.leaf("cluster", "cluster-ca", ["DNS:alertmanager-cluster"], "serverAuth,clientAuth")
pki.install("cluster", installed, "cluster")
for name in ("fleet-ca.crt", "cluster-ca.crt"):
    shutil.copy(pki.path(name), installed)
for name in ("agent.password", "alertmanager.password"):
    with open(os.path.join(installed, name), "w") as f:
        f.write("a password\n")
try:
    ok([promtool, "check", "config", "--agent", os.path.join(installed, "agent.yml")],
       "agent.yml: a valid agent config, its CA and password file beside it")
    ok([promtool, "check", "config", os.path.join(installed, "central.yml")],
       "central.yml: valid, with billing.rules.yml and fleet.rules.yml", "SUCCESS: 2 rule files found")
    for name in ("central-web.yml", "alertmanager-web.yml"):
        ok([promtool, "check", "web-config", os.path.join(installed, name)],
           "%s: a valid web config (TLS, bcrypt hashes), its certificate beside it" % name)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# Every port the recipe's command lines open is guarded.
GUARDS = (("central.yml", "prometheus", {"--web.config.file": None, "--web.listen-address": None}),
          ("agent.yml", "prometheus", {"--web.listen-address": "127.0.0.1:9090"}),
          ("alertmanager.yml", "prometheus-alertmanager",
           {"--web.config.file": "alertmanager-web.yml", "--cluster.tls-config": "cluster-tls.yml",
            "--web.listen-address": None, "--cluster.listen-address": None, "--cluster.advertise-address": None}))
for name, program, want in GUARDS:
    argv = ft.recipe_command(os.path.join(FLEET, name), program)
    given = {argv[i]: argv[i + 1] for i in range(1, len(argv) - 1) if argv[i].startswith("--")}
    bad = {flag: given.get(flag) for flag, value in want.items()
           if flag not in given or (value and given[flag].split("/")[-1] != value)
           or (value is None and given[flag].startswith(("0.0.0.0", ":")))}
    bt.check(not bad, "%s: its command line guards every port (%s; wrong: %s)" % (name, " ".join(argv[1:]), bad))

# docs/deploy.md's table of ports names each port the recipe opens: the
# listen addresses of its command lines, and the exporter the agents scrape.
opened = {"%s/tcp" % port for port in
          [t.rsplit(":", 1)[1] for g in yaml.safe_load(open(os.path.join(FLEET, "agent.yml")))["scrape_configs"]
           for sc in g["static_configs"] for t in sc["targets"]]}
for name, program, _ in GUARDS:
    argv = ft.recipe_command(os.path.join(FLEET, name), program)
    opened |= {"%s/tcp" % argv[i + 1].rsplit(":", 1)[1] for i in range(len(argv) - 1)
               if argv[i] in ("--web.listen-address", "--cluster.listen-address")}
doc = open(os.path.join(ROOT, "docs", "deploy.md")).read()
table = doc.split("<!-- fleet-ports")[1].split("<!-- /fleet-ports -->")[0] if "<!-- fleet-ports" in doc else ""
listed = {row.split("|")[1].split()[0] for row in table.splitlines() if row.startswith("| ") and "/tcp" in row}
bt.check(opened and opened <= listed, "docs/deploy.md's table of ports lists every port the recipe opens "
         "(opened %s, listed %s)" % (sorted(opened), sorted(listed)))
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

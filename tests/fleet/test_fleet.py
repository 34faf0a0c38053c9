#!/usr/bin/env python3
"""The fleet recipe of docs/deploy.md (deploy/fleet/) on four hosts, each a
network namespace on a bridge: billingd (stats build), billing-exporter as
nobody reading its segments, Prometheus in agent mode remote-writing to a
central Prometheus in its own namespace, which sends alerts to two
clustered Alertmanagers (a namespace each) that notify a webhook receiver
here.  The shipped configs and rules are used with only what a test must
change: addresses, 1 s intervals, short `for:` and group waits.

One set-up, stages in order (each a function taking the fleet):
  1. billing-load against every host: the central Prometheus's fleet totals
     equal the sum of the loads exactly; the fleet rules record every host;
  2. one host's network cut while it serves: after it returns, the central
     view holds every scrape of the cut (from the agent's WAL), the totals
     are exact again (nothing counted twice), and no alert was sent;
  3. host by host, billingd and its exporter restarted (Host.swap_kit()):
     counters never decrease, totals stay exact, no alert;
  4. a rolling upgrade, host by host, to the kit built from a billing.d
     with one more probe and metric (userpathtest.other_kit(): coupon-apply
     feeding billing_coupons_applied_total): each host's billingd restarted
     and the service built against the new kit started beside it, writing
     its segments to the same stats directory, read by the stock exporter
     of the old kit (the version-skew reader serves a team's own counter;
     an exporter upgraded ahead of billingd would refuse billingd's
     amount_minor histogram, whose buckets differ).  After each host:
     counters never decrease, totals exact (the loads plus the new
     services' books), no alert, and billing_coupons_applied_total at the
     central Prometheus for exactly the hosts upgraded so far, each equal
     to the coupons its service fired;
  5. one host's exporter killed: its BillingExporterDown, and nothing
     else, reaches the receiver exactly once though two Alertmanagers run;
  6. another host on the fleet's network (a namespace on the bridge, no
     credentials): a remote write of up{host="victim-host"} 0, a query, a
     silence on each Alertmanager, each over HTTPS and plain HTTP, with
     no password and a wrong one, and the hosts' loopback ports: none
     succeeds, and no forged series reaches the central Prometheus.  Two
     rogue Alertmanagers (one without TLS, one with a certificate of its
     own CA) ask to join the cluster and spread a silence of every alert:
     watched for ROGUE_S seconds once they serve, the cluster stays two
     and neither Alertmanager holds the silence, while an operator's silence made on one with
     credentials reaches the other (the gossip works over mutual TLS).

The recipe runs as shipped: each program's command line is read from its
file's header (fleettest.recipe_command) with only addresses and paths
set; the web configs, cluster-tls.yml and the configs' TLS and basic auth
are the shipped files, with certificates the test makes (fleettest.Pki)
and the password hashes of its own users put in.

Writes what it measured (series per host, remote-write bytes per sample) to
$FLEET_RESULTS (docs/deploy.md, "Scale"; bench/results/fleet.json is a
copy of one run's)."""
import http.server
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import billingtest as bt  # noqa: E402
import fleettest as ft  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "userpath"))
import userpathtest as up  # noqa: E402  (the kit of the other billing.d, its service and books)

for var in ("BX_EXPORTER", "BS_BILLINGD", "BX_BILLING_LOAD"):
    if not os.environ.get(var):
        bt.skip("%s is not set: run through meson test" % var)
EXPORTER, BILLINGD, LOAD = (os.environ[v] for v in ("BX_EXPORTER", "BS_BILLINGD", "BX_BILLING_LOAD"))
up.require_work()
bt.require_root("namespaces, a bridge and the exporter as nobody")
for prog, pkg in (("prometheus", "prometheus"), ("prometheus-alertmanager", "prometheus-alertmanager"),
                  ("ip", "iproute2"), ("setpriv", "util-linux")):
    bt.require_program(prog, pkg)
try:
    import yaml
except ImportError:
    bt.skip("PyYAML is not installed (python3-yaml; tests/install-deps.sh installs it)")

FLEET = os.path.join(ROOT, "deploy", "fleet")
RULES = [os.path.join(ROOT, "monitoring", "rules", f) for f in ("billing.rules.yml", "fleet.rules.yml")]
HOSTS = 4
SHORT_FOR = "3s"
CUT_S = 10
PEER_TIMEOUT_S = 3
CENTRAL, AM_OCTETS, INTRUDER = 1, (2, 3), 66
ROGUE_S = 5  # how long the rogue Alertmanagers are watched once serving: the scenario, not a wait for a condition
# the recipe's users (central-web.yml, alertmanager-web.yml) and this run's passwords
PASSWORDS = {user: os.urandom(12).hex() for user in ("agent", "operator", "prometheus")}
NEW_METRIC = "billing_coupons_applied_total"  # the new kit's own counter
checks = bt.Checks()
check = checks.check


class Receiver(http.server.BaseHTTPRequestHandler):
    """The webhook receiver: every notification, as (time, [(alertname, host, status)])."""
    got = []
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        alerts = [(a["labels"].get("alertname"), a["labels"].get("host"), a.get("status"))
                  for a in body.get("alerts", [])]
        with Receiver.lock:
            Receiver.got.append((time.monotonic(), alerts))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass

    @classmethod
    def notifications(cls):
        with cls.lock:
            return list(cls.got)


def write_yaml(path, doc):
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    return path


def shipped(name):
    """A recipe file's YAML, as shipped."""
    return yaml.safe_load(open(os.path.join(FLEET, name)))


def web_config(name, directory):
    """The shipped web config NAME in directory, each user's hash made
    from this run's password (the shipped ones are of passwords thrown
    away), the rest as shipped."""
    cfg = shipped(name)
    cfg["basic_auth_users"] = {user: ft.bt.bcrypt(PASSWORDS[user], prefix="$2y$") for user in cfg["basic_auth_users"]}
    return write_yaml(os.path.join(directory, name), cfg)


def secret(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


class Host:
    """One host: billingd, its exporter as nobody, a Prometheus agent."""

    def __init__(self, fleet, i):
        self.fleet, self.name = fleet, "h%d" % i
        self.ns, self.addr, self.veth = fleet.net.add(self.name, 10 + i)
        self.dir = os.path.join(fleet.base, self.name)
        os.makedirs(self.dir)
        self.stats = os.path.join(self.dir, "stats")
        self.start_service(BILLINGD, EXPORTER)
        self.start_agent()

    def start_service(self, billingd, exporter):
        env = dict(os.environ, BILLING_STATS_DIR=self.stats, BILLING_STATS_GROUP="nogroup")
        # Each namespace has its own ports: every host serves the recipe's.
        self.billingd = self.fleet.net.start(
            self.ns, [billingd, "--port", "8080", "--threads", "2", "--db", os.path.join(self.dir, "billing.db")],
            os.path.join(self.dir, "billingd.log"), env)
        self.billingd.wait_output(r"listening on http://127\.0\.0\.1:8080/", self.name + " billingd listening", 30)
        self.exporter = self.fleet.net.start(
            self.ns, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", exporter,
                      "--source", "stats", "--stats-dir", self.stats, "--listen", "127.0.0.1:9477"],
            os.path.join(self.dir, "exporter.log"))
        self.exporter.wait_output(r"serving http", self.name + " exporter serving", 60)

    def swap_kit(self, billingd, exporter):
        """A rolling upgrade's step on this host: the service and its
        exporter stopped and started from other builds (the agent stays)."""
        self.exporter.stop()
        self.billingd.stop()
        self.start_service(billingd, exporter)

    def start_agent(self):
        cfg = shipped("agent.yml")
        cfg["global"]["scrape_interval"] = "1s"
        rw = cfg["remote_write"][0]
        rw["url"] = "https://%s:9090/api/v1/write" % self.fleet.central_addr
        rw["queue_config"].update(batch_send_deadline="1s", max_backoff="1s")
        path = write_yaml(os.path.join(self.dir, "agent.yml"), cfg)
        shutil.copy(self.fleet.pki.path("fleet-ca.crt"), self.dir)
        secret(self.dir, rw["basic_auth"]["password_file"], PASSWORDS[rw["basic_auth"]["username"]])
        argv = ft.with_values(ft.recipe_command(os.path.join(FLEET, "agent.yml"), "prometheus"), config_file=path,
                              storage_agent_path=os.path.join(self.dir, "agent"))
        self.agent = self.fleet.net.start(self.ns, argv, os.path.join(self.dir, "agent.log"),
                                          dict(os.environ, BILLING_HOST=self.name))
        self.agent_api = ft.Prom(self.ns, "http://127.0.0.1:9090")

    def load(self, *args):
        return self.fleet.net.start(self.ns, [LOAD, "--url", "http://127.0.0.1:8080", "--json", *args],
                                    os.path.join(self.dir, "load-%d.json" % time.monotonic_ns()))

    def remote_write_counts(self):
        """(bytes, samples) the agent has remote-written: the bytes
        compressed, as on the wire."""
        _, body = ft.http_get(self.ns, "http://127.0.0.1:9090/metrics")
        text = body.decode()

        def counter(name):
            m = re.search(r"(?m)^%s\{[^}]*\} (\S+)$" % name, text)
            return float(m.group(1)) if m else None
        return (counter("prometheus_remote_storage_bytes_total"),
                counter("prometheus_remote_storage_samples_total"))


class Fleet:
    def __init__(self, base, net):
        self.base, self.net, self.hook = base, net, None
        self.services = []  # the new kit's services (userpathtest.Service), stopped at the end
        self.central_ns, self.central_addr, _ = self.net.add("central", CENTRAL)
        self.am_places = [self.net.add("am%d" % n, octet)[:2] for n, octet in enumerate(AM_OCTETS)]
        self.make_pki()
        self.start_receiver()
        self.start_alertmanagers()
        self.start_central()
        self.hosts = [Host(self, i) for i in range(1, HOSTS + 1)]
        for h in self.hosts:
            bt.wait_for(h.name + " agent ready", lambda: ft.answers(h.ns, "http://127.0.0.1:9090/-/ready"), 60)
        bt.wait_for("the central Prometheus to hear every host's agent",
                    lambda: len(self.central.by('up{billing_probes="exporter"} == 1', "host")) == HOSTS, 60)

    def make_pki(self):
        """The fleet's CA (the central Prometheus's and the Alertmanagers'
        certificates, for their addresses) and the cluster's CA (each
        Alertmanager's gossip certificate, as cluster-tls.yml says)."""
        os.makedirs(os.path.join(self.base, "pki"))
        self.pki = ft.Pki(os.path.join(self.base, "pki"))
        self.pki.ca("fleet-ca")
        self.pki.ca("cluster-ca")
        self.pki.leaf("central", "fleet-ca", ["IP:" + self.central_addr])
        for n, (_, addr) in enumerate(self.am_places):
            self.pki.leaf("am%d" % n, "fleet-ca", ["IP:" + addr])
            self.pki.leaf("am%d-cluster" % n, "cluster-ca", ["DNS:alertmanager-cluster"], "serverAuth,clientAuth")
        ca = self.pki.path("fleet-ca.crt")
        self.operator = ft.Client(ca, "operator", PASSWORDS["operator"])

    def start_receiver(self):
        self.hook = ft.in_netns(self.central_ns, lambda: http.server.ThreadingHTTPServer(
            (self.central_addr, 0), Receiver))
        threading.Thread(target=self.hook.serve_forever, daemon=True).start()

    def start_alertmanagers(self):
        cfg = shipped("alertmanager.yml")
        cfg["route"].update(group_wait="1s", group_interval="2s")
        for r in cfg["receivers"]:
            for w in r["webhook_configs"]:
                w["url"] = "http://%s:%d/%s" % (self.central_addr, self.hook.server_address[1], r["name"])
        recipe = ft.recipe_command(os.path.join(FLEET, "alertmanager.yml"), "prometheus-alertmanager")
        self.ams = []
        for n, (ns, addr) in enumerate(self.am_places):
            d = os.path.join(self.base, "am%d" % n)
            os.makedirs(d)
            path = write_yaml(os.path.join(d, "alertmanager.yml"), cfg)
            shutil.copy(os.path.join(FLEET, "cluster-tls.yml"), d)
            shutil.copy(self.pki.path("cluster-ca.crt"), d)
            self.pki.install("am%d" % n, d, "alertmanager")
            self.pki.install("am%d-cluster" % n, d, "cluster")
            argv = ft.with_values(recipe, config_file=path, storage_path=os.path.join(d, "data"),
                                  web_listen_address=addr + ":9093",
                                  web_config_file=web_config("alertmanager-web.yml", d),
                                  cluster_listen_address=addr + ":9094", cluster_advertise_address=addr + ":9094",
                                  cluster_tls_config=os.path.join(d, "cluster-tls.yml"),
                                  cluster_peer="%s:9094" % self.am_places[1 - n][1])
            self.net.start(ns, argv + ["--cluster.peer-timeout", "%ds" % PEER_TIMEOUT_S],
                           os.path.join(self.base, "am%d.log" % n))
            self.ams.append((ns, "https://%s:9093" % addr))

        def clustered(ns, url):
            try:
                _, body = ft.http_get(ns, url + "/api/v2/status", timeout=3, client=self.operator)
            except OSError:
                return False
            c = json.loads(body).get("cluster", {})
            return c.get("status") == "ready" and len(c.get("peers") or []) == 2
        for ns, url in self.ams:
            bt.wait_for("Alertmanager %s clustered with its peer" % url, lambda: clustered(ns, url), 90)

    def start_central(self):
        d = os.path.join(self.base, "central")
        os.makedirs(d)
        cfg = shipped("central.yml")
        cfg["global"]["evaluation_interval"] = "1s"
        cfg["rule_files"] = []
        for rules in RULES:  # the test's copies: `for:` shortened, nothing else
            text = open(rules).read()
            short, n = re.subn(r"(?m)^(\s+for:\s*)\S+\s*$", r"\g<1>" + SHORT_FOR, text)
            check(n >= 1, "%s: the test's copy shortens %d for: durations" % (os.path.basename(rules), n))
            copy = os.path.join(self.base, os.path.basename(rules))
            open(copy, "w").write(short)
            cfg["rule_files"].append(copy)
        am = cfg["alerting"]["alertmanagers"][0]
        am["static_configs"][0]["targets"] = [url.split("//")[1] for _, url in self.ams]
        path = write_yaml(os.path.join(d, "central.yml"), cfg)
        shutil.copy(self.pki.path("fleet-ca.crt"), d)
        secret(d, am["basic_auth"]["password_file"], PASSWORDS[am["basic_auth"]["username"]])
        self.pki.install("central", d, "central")
        url = "https://%s:9090" % self.central_addr
        argv = ft.with_values(ft.recipe_command(os.path.join(FLEET, "central.yml"), "prometheus"),
                              web_config_file=web_config("central-web.yml", d),
                              web_listen_address=self.central_addr + ":9090", config_file=path)
        self.net.start(self.central_ns, argv + ["--storage.tsdb.path", os.path.join(d, "data")],
                       os.path.join(self.base, "central.log"))
        self.central = ft.Prom(self.central_ns, url, self.operator)
        bt.wait_for("central Prometheus ready", lambda: ft.answers(self.central_ns, url + "/-/ready", self.operator),
                    60)
        bt.wait_for("the central Prometheus to know both Alertmanagers",
                    lambda: len(self.central.api("/api/v1/alertmanagers")["activeAlertmanagers"]) == 2, 60)


def finished_load(proc, what):
    rc = proc.proc.wait(timeout=180)
    out = proc.output()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    summary = json.loads(lines[-1]) if lines else None
    check(rc == 0 and summary and summary["transport_errors"] == 0,
          "%s: billing-load ran (rc %d, %s)" % (what, rc, out.strip()[-200:]))
    return summary or {}


# What billing-load counts, and the exporter's series that must equal it.
BOOKS = (("invoices_created", 'billing_invoices_total'),
         ("payments_approved", 'billing_payments_total{outcome="approved"}'),
         ("payments_declined", 'billing_payments_total{outcome="declined"}'),
         ("refunds", 'billing_refunds_total'),
         ("responses", 'billing_requests_total'))


def central_totals(fleet):
    """{(key, host): value} of the books at the central Prometheus."""
    out = {}
    for key, series in BOOKS:
        for host, v in fleet.central.by("sum by (host) (%s)" % series, "host").items():
            out[(key, host)] = v
    return out


def wait_exact(fleet, want, what):
    """Waits until the central totals equal want ({(key, host): value}),
    then checks them; returns the last totals read."""
    got = {}

    def equal():
        got.update(central_totals(fleet))
        return all(got.get(k) == v for k, v in want.items())
    try:
        bt.wait_for(what, equal, 60)
    except RuntimeError:
        pass
    bad = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    check(not bad, "%s: every host's books exact at the central Prometheus (wrong: %s)" % (what, bad))
    return got


def stage_totals(fleet, want, results):
    """billing-load on every host at once: exact fleet totals, the fleet view recorded."""
    t0 = time.monotonic()
    loads = [(h, h.load("--rate", "100", "--duration", "5", "--concurrency", "4", "--seed", str(i)))
             for i, h in enumerate(fleet.hosts, 1)]
    for h, proc in loads:
        summary = finished_load(proc, h.name)
        for key, _ in BOOKS:
            want[(key, h.name)] = want.get((key, h.name), 0) + summary.get(key, 0)
    got = wait_exact(fleet, want, "after the loads")
    fleet_invoices = sum(v for (k, _), v in want.items() if k == "invoices_created")
    total = fleet.central.by("sum(billing_invoices_total)", None).get(None)
    check(total == fleet_invoices, "the fleet total of invoices %s == the loads' sum %d" % (total, fleet_invoices))
    check(sum(v for (k, _), v in got.items() if k == "invoices_created") == fleet_invoices,
          "the per-host invoices add up to the fleet's")
    elapsed = time.monotonic() - t0

    def recorded():
        tps = fleet.central.by("service_host:billing_transactions:rate5m", "host")
        return (len(tps) == HOSTS and all(v > 0 for v in tps.values())
                and fleet.central.query("service:billing_transactions:rate5m")
                and fleet.central.query("service:billing_payment_approval_ratio:rate5m")
                and fleet.central.query("service_handler:billing_request_duration_seconds:p99_rate5m"))
    try:
        bt.wait_for("the fleet view recorded", recorded, 30)
    except RuntimeError:
        pass
    check(bool(recorded()), "fleet rules record TPS for each of the %d hosts, the total, the approval ratio "
          "and p99 per handler" % HOSTS)
    ratio = fleet.central.by("service:billing_payment_approval_ratio:rate5m", "service").get("billingd")
    check(ratio is not None and 0.5 < ratio < 1, "approval ratio %s for the fleet" % ratio)

    series = fleet.central.by('count by (host) ({host=~"h.*"})', "host")
    check(len(series) == HOSTS, "series counted per host at the central Prometheus: %s" % series)
    results.update(series_per_host=series, scrape_interval_s=1, load_window_s=round(elapsed, 1),
                   load_requests_per_s_per_host=100)


def stage_cut(fleet, want, results):
    """A host's network cut for CUT_S seconds while it serves."""
    host = fleet.hosts[2]
    sent_before = len(Receiver.notifications())
    proc = host.load("--rate", "20", "--duration", str(CUT_S + 10), "--concurrency", "2", "--seed", "9")
    bt.wait_for(host.name + "'s load to be seen centrally",
                lambda: fleet.central.by("sum by (host) (billing_requests_total)", "host").get(host.name, 0)
                > want[("responses", host.name)], 30)
    ft.ip("link", "set", host.veth, "down")
    cut_at = time.time()
    try:
        # The cut lasts CUT_S seconds whatever happens meanwhile: the
        # scenario, not a wait for a condition.
        time.sleep(CUT_S)
        last = fleet.central.by('timestamp(up{host="%s"})' % host.name, "host").get(host.name, 0)
        check(last < cut_at + 3, "the cut holds: the central Prometheus's last sample of %s is %.0f s old"
              % (host.name, time.time() - last))
    finally:
        ft.ip("link", "set", host.veth, "up")
    back_at = time.time()
    summary = finished_load(proc, host.name + " through the cut")
    for key, _ in BOOKS:
        want[(key, host.name)] += summary.get(key, 0)
    wait_exact(fleet, want, "after the cut")

    # Every scrape of the cut arrived: no gap in the host's `up`, and its
    # request counter never went down, from before the cut to after it.
    window = int(time.time() - cut_at) + 10
    up = fleet.central.samples('up{host="%s"}[%ds]' % (host.name, window))
    during = [t for t, _ in up if cut_at <= t <= back_at]
    gaps = [b[0] - a[0] for a, b in zip(up, up[1:])]
    check(len(during) >= CUT_S - 3 and max(gaps) < 5,
          "%s: %d scrapes of the %d s cut reached the central Prometheus after it, largest gap %.1f s"
          % (host.name, len(during), CUT_S, max(gaps)))
    reqs = fleet.central.samples('sum by (host) (billing_requests_total{host="%s"})[%ds:1s]' % (host.name, window))
    check(all(b[1] >= a[1] for a, b in zip(reqs, reqs[1:])), "%s's requests never decrease across the cut" % host.name)
    check(len(Receiver.notifications()) == sent_before, "no notification about the cut (%s)"
          % Receiver.notifications()[sent_before:])
    results.update(cut_s=CUT_S, scrapes_delivered_after_cut=len(during))


def never_decrease(fleet, want, since, what):
    """Every host's books at the central Prometheus, second by second since
    SINCE: never lower than the second before, and ending at WANT's."""
    window = int(time.time() - since) + 5
    for h in fleet.hosts:
        for key, series in BOOKS:
            got = fleet.central.samples('sum by (host) (%s)[%ds:1s]' % (on_host(series, h.name), window))
            last = got[-1] if got else (0, None)
            check(all(b[1] >= a[1] for a, b in zip(got, got[1:])) and last[0] > time.time() - 5
                  and last[1] == want[(key, h.name)],
                  "%s: %s's %s never decrease and end at %d (last %s, %.0f s ago)"
                  % (what, h.name, key, want[(key, h.name)], last[1], time.time() - last[0]))


def on_host(series, host):
    """SERIES (name{labels} or name) restricted to HOST."""
    name, _, labels = series.partition("{")
    return '%s{host="%s"%s' % (name, host, "," + labels if labels else "}")


def roll(fleet, step):
    """Host by host: step(host), then the host scraped again; returns when
    the last host is, with the time the first step began."""
    started = time.time()
    for h in fleet.hosts:
        step(h)
        swapped = time.time()
        bt.wait_for(h.name + " scraped again after its step", lambda: fleet.central.by(
            'up{host="%s"} == 1 and timestamp(up{host="%s"}) > %f' % (h.name, h.name, swapped),
            "host").get(h.name) == 1, 30)
    return started


def stage_rolling_restart(fleet, want):
    """Host by host, billingd and its exporter restarted: every host's
    counters never decrease, the totals stay exact, no alert."""
    sent_before = len(Receiver.notifications())
    started = roll(fleet, lambda h: h.swap_kit(BILLINGD, EXPORTER))
    wait_exact(fleet, want, "after the rolling restart")
    never_decrease(fleet, want, started, "rolling restart")
    check(len(Receiver.notifications()) == sent_before, "no notification about the rolling restart (%s)"
          % Receiver.notifications()[sent_before:])


def books_totals(books, ms):
    """{BOOKS key: value} a service's books add to the exporter's series."""
    samples = up.expected_metrics(books, ms)
    out = {}
    for key, series in BOOKS:
        name, _, labels = series.partition("{")
        sel = set(re.findall(r'(\w+)="([^"]*)"', labels))
        out[key] = sum(v for (n, lbs), v in samples.items() if n == name and sel <= set(lbs))
    return out


def stage_rolling_upgrade(fleet, want, new_kit, results):
    """Host by host, billingd restarted and the new kit's service started
    beside it (module docstring, stage 4)."""
    kit, ms = new_kit
    sent_before = len(Receiver.notifications())
    coupons = {}

    def upgrade(h):
        h.swap_kit(BILLINGD, EXPORTER)
        # meson's LD_LIBRARY_PATH names this build's library, which would
        # win over the new kit's rpath (its probe's symbol missing)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_STATS") and k != "LD_LIBRARY_PATH"}
        env.update(BILLING_STATS_DIR=h.stats, BILLING_STATS_GROUP="nogroup")
        books_dir = os.path.join(h.dir, "new-kit-books")
        os.mkdir(books_dir)
        svc = up.Service(kit, books_dir, workers=2, threads=2, prefix=["ip", "netns", "exec", h.ns], env=env)
        fleet.services.append(svc)
        svc.batch()
        books = svc.books()
        coupons[h.name] = len(books.fires("coupon-apply"))
        for key, v in books_totals(books, ms).items():
            want[(key, h.name)] += v
        got = {}

        def served():
            got.clear()
            got.update(fleet.central.by("sum by (host) (%s)" % NEW_METRIC, "host"))
            return got == coupons
        try:
            bt.wait_for("%s of %s at the central Prometheus" % (NEW_METRIC, h.name), served, 30)
        except RuntimeError:
            pass
        check(got == coupons and all(coupons.values()),
              "%s upgraded: %s at the central Prometheus for exactly the hosts upgraded so far, each the "
              "coupons its service fired (%s; fired %s)" % (h.name, NEW_METRIC, got, coupons))
    started = roll(fleet, upgrade)
    wait_exact(fleet, want, "after the rolling upgrade")
    never_decrease(fleet, want, started, "rolling upgrade")
    check(len(Receiver.notifications()) == sent_before, "no notification about the rolling upgrade (%s)"
          % Receiver.notifications()[sent_before:])
    results.update(upgrade_s=round(time.time() - started, 1))


def stage_exporter_down(fleet, results):
    """One exporter killed: its down alert reaches the receiver once."""
    host = fleet.hosts[1]
    host.exporter.stop(signal.SIGKILL)
    killed = time.monotonic()

    def down_alert_sent():
        return [n for n in Receiver.notifications() if ("BillingExporterDown", host.name, "firing") in n[1]]
    bt.wait_for("BillingExporterDown of %s at the receiver" % host.name, down_alert_sent, 90)
    first = down_alert_sent()[0][0]
    # Both Alertmanagers hold the alert; the second notifies, if it does,
    # PEER_TIMEOUT_S after the first and a group interval later at most.
    for ns, url in fleet.ams:
        bt.wait_for("%s to hold the alert" % url, lambda: json.loads(
            ft.http_get(ns, url + "/api/v2/alerts", client=fleet.operator)[1]), 30)
    quiet_until = first + 3 * PEER_TIMEOUT_S + 3 * 2
    while time.monotonic() < quiet_until:
        time.sleep(0.5)
    got = Receiver.notifications()
    alerts = [a for _, n in got for a in n]
    check(len(got) == 1 and alerts == [("BillingExporterDown", host.name, "firing")],
          "exactly one notification, BillingExporterDown of %s, from two Alertmanagers (got %s)" % (host.name, got))
    results.update(exporter_down_to_receiver_s=round(first - killed, 1))


def silence(matcher_value, regex, by, days=30):
    """A silence (Alertmanager API v2) of alertname MATCHER_VALUE for DAYS."""
    now = time.time()
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
    return json.dumps({"matchers": [{"name": "alertname", "value": matcher_value, "isRegex": regex,
                                     "isEqual": True}],
                       "startsAt": iso(now), "endsAt": iso(now + days * 86400), "createdBy": by,
                       "comment": "issue 46"}).encode()


def silences(fleet, ns, url):
    """[(createdBy, matcher value)] of the silences an Alertmanager holds, not expired."""
    _, body = ft.http_get(ns, url + "/api/v2/silences", client=fleet.operator)
    return [(x["createdBy"], x["matchers"][0]["value"]) for x in json.loads(body)
            if x["status"]["state"] != "expired"]


def start_rogues(fleet, ns, addr):
    """Two Alertmanagers of the intruder's asking to join the cluster: one
    without TLS, one with a cluster certificate of its own CA (the right
    name, the wrong signer).  [(name, API url)]."""
    d = os.path.join(fleet.base, "intruder")
    os.makedirs(d)
    write_yaml(os.path.join(d, "alertmanager.yml"), {"route": {"receiver": "none"}, "receivers": [{"name": "none"}]})
    fleet.pki.ca("rogue-ca")
    fleet.pki.leaf("rogue-cluster", "rogue-ca", ["DNS:alertmanager-cluster"], "serverAuth,clientAuth")
    fleet.pki.install("rogue-cluster", d, "cluster")
    shutil.copy(fleet.pki.path("rogue-ca.crt"), os.path.join(d, "cluster-ca.crt"))
    shutil.copy(os.path.join(FLEET, "cluster-tls.yml"), d)
    peers = ["--cluster.peer=%s:9094" % a for _, a in fleet.am_places]
    rogues = []
    for name, web, gossip, tls in (("rogue without TLS", 9093, 9094, []),
                                   ("rogue with its own CA", 9096, 9095,
                                    ["--cluster.tls-config", os.path.join(d, "cluster-tls.yml")])):
        fleet.net.start(ns, ["prometheus-alertmanager", "--config.file", os.path.join(d, "alertmanager.yml"),
                             "--storage.path", os.path.join(d, "data-%d" % web),
                             "--web.listen-address", "%s:%d" % (addr, web),
                             "--cluster.listen-address", "%s:%d" % (addr, gossip),
                             "--cluster.advertise-address", "%s:%d" % (addr, gossip),
                             "--cluster.settle-timeout", "1s", "--cluster.tcp-timeout", "2s", *tls, *peers],
                        os.path.join(fleet.base, "rogue-%d.log" % web))
        rogues.append((name, "http://%s:%d" % (addr, web)))
    return rogues


def stage_intruder(fleet, results):
    """Another host on the fleet's network, without credentials (module
    docstring, stage 6)."""
    t_stage = time.monotonic()
    ns, addr, _ = fleet.net.add("intruder", INTRUDER)
    rogues = start_rogues(fleet, ns, addr)  # they start (and try to join) while the rest is tried
    now_ms = int(time.time() * 1000)
    victim = {"host": "victim-host", "service": "billingd", "billing_probes": "exporter"}
    forged = ft.remote_write_body([(dict(victim, __name__="up", job="billing-exporter"), 0, now_ms),
                                   (dict(victim, __name__="billing_payments_total", outcome="approved"), 1e9, now_ms)])
    central = "%s:9090" % fleet.central_addr
    guess = ft.Client(None, "agent", "guess")
    attempts = []

    def attempt(what, url, client=ft.NOBODY, data=None, headers=None, method=None):
        try:
            status = ft.request(ns, url, client, data, headers, method, timeout=5)[0]
        except OSError as e:  # no HTTP answer: refused, reset, a TLS failure
            status = "no answer (%s)" % str(getattr(e, "reason", e))[:60]
        attempts.append((what, status))
    for scheme in ("https", "http"):
        for who, client in (("no password", ft.NOBODY), ("a wrong password", guess)):
            attempt("remote write over %s, %s" % (scheme, who), "%s://%s/api/v1/write" % (scheme, central),
                    client, forged, ft.REMOTE_WRITE_HEADERS, "POST")
            attempt("query over %s, %s" % (scheme, who),
                    "%s://%s/api/v1/query?query=billing_payments_total" % (scheme, central), client)
            for n, (_, am_addr) in enumerate(fleet.am_places):
                attempt("silence on alertmanager %d over %s, %s" % (n, scheme, who),
                        "%s://%s:9093/api/v2/silences" % (scheme, am_addr), client,
                        silence(".+", True, "intruder"), {"Content-Type": "application/json"}, "POST")
    for h in fleet.hosts[:1]:
        for port in (9477, 9090):
            attempt("%s's loopback port %d on its address" % (h.name, port), "http://%s:%d/" % (h.addr, port))
    succeeded = [(w, st) for w, st in attempts if isinstance(st, int) and st < 400]
    check(not succeeded and len(attempts) == 2 * 2 * (2 + len(fleet.am_places)) + 2,
          "another host on the network, without credentials: none of %d writes, queries, silences and loopback "
          "ports answered (succeeded: %s; answers: %s)" % (len(attempts), succeeded, sorted({str(st) for _, st in attempts})))
    # the same forged write with the agents' credentials is taken: the
    # refusals above were for want of them, not for a bad request
    agent = ft.Client(fleet.pki.path("fleet-ca.crt"), "agent", PASSWORDS["agent"])
    control = ft.remote_write_body([({"__name__": "fleet_test_write_control"}, 1, now_ms)])
    status = ft.request(ns, "https://%s/api/v1/write" % central, agent, control, ft.REMOTE_WRITE_HEADERS, "POST")[0]
    check(status == 204, "the agents' credentials write from that host (%s): the refusals were for credentials" % status)
    check(not fleet.central.query('{host="victim-host"}'), "no series of victim-host at the central Prometheus")

    # the cluster: an operator's silence spreads; the rogues' do not
    am0, am1 = fleet.ams
    status, body = ft.request(am0[0], am0[1] + "/api/v2/silences", fleet.operator, silence("FleetGossipCheck", False,
                              "operator"), {"Content-Type": "application/json"}, "POST")
    t0 = time.monotonic()
    try:
        bt.wait_for("the operator's silence on the other Alertmanager",
                    lambda: ("operator", "FleetGossipCheck") in silences(fleet, *am1), 30, interval=0.1)
    except RuntimeError:
        pass
    spread = ("operator", "FleetGossipCheck") in silences(fleet, *am1)
    check(status == 200 and spread, "an operator's silence made on one Alertmanager reaches the other by gossip over "
          "mutual TLS (%d, %.1f s)" % (status, time.monotonic() - t0))
    results.update(gossip_silence_spread_s=round(time.monotonic() - t0, 1))
    if status == 200:
        ft.request(am0[0], am0[1] + "/api/v2/silence/" + json.loads(body)["silenceID"], fleet.operator,
                   method="DELETE")
    made = []
    for name, url in rogues:
        bt.wait_for(name + " serving", lambda: ft.answers(ns, url + "/-/ready"), 30)
        made.append(ft.request(ns, url + "/api/v2/silences", ft.NOBODY, silence(".+", True, "intruder"),
                               {"Content-Type": "application/json"}, "POST")[0])
    check(made == [200, 200], "the rogue Alertmanagers took the intruder's silence of every alert (%s)" % made)
    end, joined, spread = time.monotonic() + ROGUE_S, [], []
    while time.monotonic() < end and not joined and not spread:
        for ns_am, url in fleet.ams:
            _, body = ft.http_get(ns_am, url + "/api/v2/status", client=fleet.operator)
            peers = json.loads(body)["cluster"].get("peers") or []
            joined += [(url, p["address"]) for p in peers if p["address"].startswith(addr)]
            spread += [url for by, _ in silences(fleet, ns_am, url) if by == "intruder"]
        time.sleep(0.5)
    check(not joined and not spread, "for %d s two rogue Alertmanagers asked to join: the cluster stays two and no "
          "silence of theirs reaches it (joined %s, silenced %s)" % (ROGUE_S, joined, spread))
    results.update(intruder_s=round(time.monotonic() - t_stage, 1))


def main():
    base = tempfile.mkdtemp(prefix="billing-fleet-")
    os.chmod(base, 0o755)
    net = fleet = None
    prev = signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))  # meson's timeout: clean up
    try:
        t0 = time.monotonic()
        new_kit = up.other_kit()  # built once per source state, shared with the userpath suite
        t0 = time.monotonic()
        net = ft.Net()
        fleet = Fleet(base, net)
        results = {"hosts": HOSTS, "setup_s": round(time.monotonic() - t0, 1)}
        want = {}
        sent0 = {h.name: h.remote_write_counts() for h in fleet.hosts}
        stage_totals(fleet, want, results)
        stage_cut(fleet, want, results)
        sent1 = {h.name: h.remote_write_counts() for h in fleet.hosts}
        # Every sample of both stages is at the central Prometheus now
        # (their totals are exact): the wire's bytes per sample, each host.
        results["remote_write_bytes_per_sample"] = {
            n: round((sent1[n][0] - sent0[n][0]) / (sent1[n][1] - sent0[n][1]), 2) for n in sent0}
        stage_rolling_restart(fleet, want)
        stage_rolling_upgrade(fleet, want, new_kit, results)
        stage_exporter_down(fleet, results)
        stage_intruder(fleet, results)
        results["total_s"] = round(time.monotonic() - t0, 1)
        print(json.dumps(results, indent=1, sort_keys=True))
        out = os.environ.get("FLEET_RESULTS")
        if out:
            results["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            results["command"] = "meson test -C build fleet (tests/fleet/test_fleet.py)"
            with open(out, "w") as f:
                json.dump(results, f, indent=1, sort_keys=True)
                f.write("\n")
    except BaseException:
        if net:
            for p in net.procs:
                print("--- %s (%s)\n%s" % (p.log_path, "running" if p.alive() else p.proc.returncode,
                                           p.output()[-1500:]))
        raise
    finally:
        for svc in fleet.services if fleet else []:
            svc.stop()
        if fleet and fleet.hook:
            fleet.hook.shutdown()
        if net:
            net.cleanup()
        signal.signal(signal.SIGTERM, prev)
        shutil.rmtree(base, ignore_errors=True)
    checks.finish()


main()

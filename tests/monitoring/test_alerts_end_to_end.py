#!/usr/bin/env python3
"""The shipped alerts end to end from the stats path, and the runbook they
point at followed as written, on each Prometheus and Alertmanager here: the
ones on PATH (Debian 12: 2.42 and 0.25) and those of the sid root the
distros suite keeps (3.5 and 0.33, run from there: Go programs that need
only libc; said and left out while that root is absent).  Both run at once,
started as docs/slow-requests.md recommends
(--enable-feature=native-histograms,exemplar-storage), on one set-up:

- job "billing": billingd built with stats, billing-exporter as nobody
  reading its segments (--stats-dir, no BPF);
- job "checkout", a new user's service: another billingd whose card gateway
  takes 300 ms (its payments and refunds are slow, its invoices not), its
  own stats directory and exporter, first seen while the test runs;
- each Prometheus loads a copy of monitoring/rules/billing.rules.yml on a
  clock TIME_SCALE times fast: every range, subquery step, offset and
  `for:` divided by it, nothing else changed (promtool's unit tests,
  monitoring/tests/billing.rules.test.yml, check the real durations);
- each Alertmanager sends to a webhook receiver here.

  1. a normal load on "billing" (2 % declines): no decline or TPS alert;
  2. a burst of declines (a second billingd of the service, 90 % declined):
     BillingPaymentDeclineRatioHigh reaches the receiver, and the commands
     of docs/runbook.md's section its runbook_url names, read from the page
     and run, print the `top` command for billing's stats directory, which
     runs;
  3. the load stopped: once its transactions leave the 5 m window,
     BillingTPSLow reaches the receiver, never before that window empties;
  4. "checkout" is slow from its first request: the fast latency burn
     alert reaches the receiver for it, no sooner than its misses, counted
     for the share of the hour it was seen in, pass 14.4 % (8.6 minutes of
     a job whose every request is slow; the test's clock divides them) and
     within seconds of it; the runbook section its runbook_url names,
     followed as written from the alert's job and source link, prints the
     `billing-probes slow --id` command for the slowest exemplar, which,
     run as nobody, prints that request's trail: its ID, handler and
     duration those of the exemplar, its gateway call the 300 ms.

Every wait is for a condition, with a deadline."""
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "exporter"))
sys.path.insert(0, os.path.join(ROOT, "tests", "billingd"))
sys.path.insert(0, os.path.join(ROOT, "tests", "docs"))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402
from billingdtest import Billingd, run_load, start_load  # noqa: E402
from test_links import slug  # noqa: E402

exe = h.env_path("BX_EXPORTER")
billingd_exe, load_exe = h.env_path("BS_BILLINGD"), h.env_path("BX_BILLING_LOAD")
tool = os.environ.get("BS_TOOL") or bt.skip("billing-probes is not built (-Dtool=enabled): the runbook runs it")
if os.geteuid() != 0:
    bt.skip("runs the exporter as nobody over group-owned segments: needs root (CI runs as root)")
bt.require_program("prometheus", "prometheus")
bt.require_program("prometheus-alertmanager", "prometheus-alertmanager")
for program, package in (("setpriv", "util-linux"), ("curl", "curl"), ("jq", "jq")):
    bt.require_program(program, package)
RULES = os.path.join(ROOT, "monitoring", "rules", "billing.rules.yml")
FEATURES = "native-histograms,exemplar-storage"
TIME_SCALE = 20  # the test's rule copy: [5m] -> [15s], [1h:1m] -> [180s:3s], for: 2m -> 6s
UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
CACHE = os.environ.get("BILLING_PROBES_CACHE", "/var/cache/billing-probes")  # as tests/distros finds its roots
SID = os.path.join(CACHE, "roots", "sid", "usr", "bin")
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
GATEWAY_MS = 300
FAST_BURN = 14.4 * 0.01  # the fast burn's threshold, of a 1 h window's misses


def compressed(text):
    """The rules with every duration of a range, a subquery's range and
    step, an offset and a `for:` divided by TIME_SCALE; (text, durations
    changed)."""
    def seconds(n, unit):
        s = int(n) * UNIT_S[unit]
        if s % TIME_SCALE:
            raise RuntimeError("%s%s does not divide by %d" % (n, unit, TIME_SCALE))
        return "%ds" % (s // TIME_SCALE)
    text, a = re.subn(r"\[(\d+)([smhd]):(\d+)([smhd])\]",
                      lambda m: "[%s:%s]" % (seconds(*m.group(1, 2)), seconds(*m.group(3, 4))), text)
    text, b = re.subn(r"\[(\d+)([smhd])\]", lambda m: "[%s]" % seconds(*m.group(1, 2)), text)
    text, c = re.subn(r"\boffset (\d+)([smhd])\b", lambda m: "offset " + seconds(*m.group(1, 2)), text)
    text, d = re.subn(r"(?m)^(\s+for:\s*)(\d+)([smhd])\s*$", lambda m: m.group(1) + seconds(*m.group(2, 3)), text)
    return text, 2 * a + b + c + d


def version(program):
    m = re.search(r"version (\d+\.\d+\.\d+)", bt.run([program, "--version"]).stdout)
    return m.group(1) if m else "?"


class Receiver(http.server.BaseHTTPRequestHandler):
    """Alertmanager's webhook: each alert of each notification, by the
    path of its Alertmanager."""
    got = {}  # path: [(time, alert)]
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with Receiver.lock:
            Receiver.got.setdefault(self.path, []).extend((time.monotonic(), a) for a in body.get("alerts", []))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


class Stack:
    """One Alertmanager and one Prometheus with both features, scraping the
    jobs, loading the compressed rules, alerting to it."""

    def __init__(self, name, prometheus, alertmanager, jobs, rules, receiver_port):
        self.name, self.path = name, "/" + re.sub(r"\W", "-", name)
        self.versions = "Prometheus %s, Alertmanager %s" % (version(prometheus), version(alertmanager))
        self.dir = tempfile.mkdtemp(prefix="billing-alerts-am-")
        self.am_port = h.free_port()
        cfg = os.path.join(self.dir, "alertmanager.yml")
        with open(cfg, "w") as f:
            json.dump({"route": {"receiver": "hook", "group_by": ["alertname", "job"], "group_wait": "1s",
                                 "group_interval": "1s", "repeat_interval": "1h"},
                       "receivers": [{"name": "hook", "webhook_configs": [
                           {"url": "http://127.0.0.1:%d%s" % (receiver_port, self.path),
                            "send_resolved": False}]}]}, f)
        self.am_log = open(os.path.join(self.dir, "alertmanager.log"), "w+")
        self.am = subprocess.Popen([alertmanager, "--config.file", cfg, "--storage.path",
                                    os.path.join(self.dir, "data"), "--web.listen-address",
                                    "127.0.0.1:%d" % self.am_port, "--cluster.listen-address="],
                                   stdout=self.am_log, stderr=subprocess.STDOUT)
        self.prom = None
        bt.wait_for(name + ": Alertmanager ready", self.am_ready, 60)
        port = h.free_port()  # its source links name it as a person reaches it
        self.prom = h.Prometheus((), rule_files=[rules], features=[FEATURES], exe=prometheus, port=port,
                                 args=["--web.external-url=http://127.0.0.1:%d" % port], scrape_configs=[
            {"job_name": job, "static_configs": [{"targets": ["127.0.0.1:%d" % port],
                                                  "labels": {"billing_probes": "exporter"}}]}
            for job, port in jobs])
        cfg_path = os.path.join(self.prom.dir, "prometheus.yml")
        with open(cfg_path) as f:
            cfg = json.load(f)
        cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:%d" % self.am_port]}]}]}
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        urllib.request.urlopen(urllib.request.Request(self.prom.url + "/-/reload", method="POST"), timeout=10)

    def am_ready(self):
        if self.am.poll() is not None:
            raise RuntimeError("alertmanager exited: " + bt.written(self.am_log)[-500:])
        try:
            return h.http_get("http://127.0.0.1:%d/-/ready" % self.am_port)[0] == 200
        except OSError:
            return False

    def ready(self, jobs):
        bt.wait_for(self.name + ": Prometheus scraping every job",
                    lambda: len(self.prom.query("up == 1")) == len(jobs), 60)
        bt.wait_for(self.name + ": Prometheus knows the Alertmanager", lambda: json.loads(
            h.http_get(self.prom.url + "/api/v1/alertmanagers")[2])["data"]["activeAlertmanagers"], 60)

    def received(self, name, job):
        """[(time, alert)] of the firing alerts NAME of JOB at the receiver."""
        with Receiver.lock:
            return [(t, a) for t, a in Receiver.got.get(self.path, [])
                    if a["labels"].get("alertname") == name and a["labels"].get("job") == job
                    and a.get("status") == "firing"]

    def firing(self, name, job):
        return any(r["metric"].get("alertstate") == "firing"
                   for r in self.prom.query('ALERTS{alertname="%s",job="%s"}' % (name, job)))

    def cleanup(self):
        if self.prom:
            self.prom.cleanup()
        bt.stop_process(self.am)
        self.am_log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- the runbook, as a person follows it -------------------------------------------

def runbook_section(url):
    """The sh blocks of the section runbook_url names (PATH#ANCHOR, PATH
    relative to the tree), in order, each dedented."""
    path, _, anchor = url.partition("#")
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("#") and slug(l.lstrip("#")) == anchor), None)
    if start is None:
        raise RuntimeError("%s: no heading whose anchor is %r" % (path, anchor))
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    end = next((i for i in range(start + 1, len(lines))
                if re.match(r"#{1,%d} " % level, lines[i])), len(lines))
    blocks, block, indent = [], None, ""
    for line in lines[start + 1:end]:
        m = re.match(r"^(\s*)```(\w*)\s*$", line)
        if block is None and m and m.group(2) == "sh":
            block, indent = [], m.group(1)
        elif block is not None and m and m.group(1) == indent and not m.group(2):
            blocks.append("\n".join(block))
            block = None
        elif block is not None:
            block.append(line[len(indent):] if line.startswith(indent) else line)
    return blocks


def follow_runbook(stack, alert, host_command):
    """Follows the section the alert's runbook_url names: its first block
    set to the alert's Prometheus (its source link's scheme, host and port)
    and job, the blocks up to the one that is a host's command run in one
    bash; each "on HOST: COMMAND" line they print checked against that
    block's form and run, as nobody, with this build's billing-probes
    first on PATH.  [(host, command, exit, stdout, stderr)], and what the
    blocks printed."""
    url = alert["annotations"].get("runbook_url", "")
    try:
        blocks = runbook_section(url) if url else []
    except (OSError, RuntimeError) as e:
        print(e)
        blocks = []
    if not bt.check(blocks and re.fullmatch(r"PROM=\S+ JOB=\S+", blocks[0].strip()),
                    "%s: the alert's runbook_url %r names a section whose first block sets PROM and JOB (%r)"
                    % (stack.name, url, blocks[:1])):
        return [], ""
    source = urllib.parse.urlsplit(alert["generatorURL"])
    prom, job = "%s://%s" % (source.scheme, source.netloc), alert["labels"]["job"]
    bt.check(prom == stack.prom.url, "%s: the alert's source link names its Prometheus (%s)" % (stack.name, prom))
    run = [b for b in blocks[1:] if not b.startswith(host_command)]
    example = [b for b in blocks[1:] if b.startswith(host_command)]
    script = "PROM=%s JOB=%s\n%s\n" % (shlex.quote(prom), shlex.quote(job), "\n".join(run))
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    bt.check(p.returncode == 0 and not p.stderr.strip(),
             "%s: the section's blocks ran (%d, %r)" % (stack.name, p.returncode, p.stderr.strip()[-400:]))
    done = []
    for line in p.stdout.splitlines():
        m = re.fullmatch(r"on (\S+): (%s .*)" % re.escape(host_command), line)
        if not m:
            continue
        host, command = m.groups()
        if example:
            want, got = shlex.split(example[0]), shlex.split(command)
            bt.check(len(want) == len(got) and all(w == g for w, g in zip(want, got)
                                                   if w.startswith("-") or w.isalpha()),
                     "%s: %r has the form of the section's example %r" % (stack.name, command, example[0]))
        env = dict(os.environ, PATH=os.path.dirname(tool) + os.pathsep + os.environ["PATH"])
        r = subprocess.run(AS_NOBODY + ["bash", "-c", command], capture_output=True, text=True, timeout=60, env=env)
        done.append((host, command, r.returncode, r.stdout, r.stderr))
    return done, p.stdout


base = tempfile.mkdtemp(prefix="billing-alerts-")
os.chmod(base, 0o755)
procs, svcs, stacks, loads = [], [], [], []
try:
    with open(RULES) as f:
        short, n = compressed(f.read())
    bt.check(n >= 40, "the test's rule copy divides %d ranges, subquery steps, offsets and for: durations by %d"
             % (n, TIME_SCALE))
    rules = os.path.join(base, "billing.rules.yml")
    with open(rules, "w") as f:
        f.write(short)

    # The services: billingd processes sharing a stats directory per job,
    # each read by its exporter as nobody through the group.
    os.environ["BILLING_STATS_GROUP"] = "nogroup"
    os.environ.pop("BILLING_STATS_SLOW", None)  # billing.d's threshold, the SLO rules' bucket
    dirs, exporters = {}, {}
    for job in ("billing", "checkout"):
        dirs[job] = os.path.join(base, "stats-" + job)
        exporters[job] = None
    env_of = {job: dict(os.environ, BILLING_STATS_DIR=dirs[job]) for job in dirs}
    svc = Billingd(billingd_exe, "--gateway-latency-ms", "0", "--decline-rate", "0.02", "--threads", "4",
                   env=env_of["billing"])
    svcs.append(svc)
    slow_svc = Billingd(billingd_exe, "--gateway-latency-ms", str(GATEWAY_MS), "--gateway-latency-dist", "fixed",
                        "--decline-rate", "0.02", "--threads", "4", env=env_of["checkout"])
    svcs.append(slow_svc)
    for job in dirs:
        exporters[job] = h.Exporter(*AS_NOBODY, exe, "--stats-dir", dirs[job])
        procs.append(exporters[job].proc)
        bt.check("0 probe attachments on 0 target(s), 1 stats target(s)" in exporters[job].output(),
                 "%s: the exporter runs as nobody with no BPF" % job)
    jobs = [(job, exporters[job].port) for job in dirs]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    servers = [("PATH", shutil.which("prometheus"), shutil.which("prometheus-alertmanager"))]
    sid = [os.path.join(SID, p) for p in ("prometheus", "prometheus-alertmanager")]
    if all(os.access(p, os.X_OK) for p in sid):
        servers.append(("sid", *sid))
    else:
        print("not run: the sid root's Prometheus 3 and Alertmanager (%s is absent: the distros suite, "
              "tests/distros, builds the root)" % SID)
    for name, prometheus, alertmanager in servers:
        stacks.append(Stack(name, prometheus, alertmanager, jobs, rules, server.server_address[1]))
        stacks[-1].name = "%s (%s)" % (name, stacks[-1].versions)
        print(stacks[-1].name)
    for s in stacks:
        s.ready(jobs)

    # 4 (from the start). The new user's service under load, slow from its
    # first request; its alert is waited for after the others.
    t_checkout = time.monotonic()
    loads.append(start_load(load_exe, slow_svc.url, "--rate", "20", "--duration", "900", "--concurrency", "8",
                            "--seed", "5"))

    # 1. A normal load: the service is healthy.  At a fixed rate, so that its
    # size does not depend on how fast the machine is at that moment: the
    # burst below must outweigh it whatever runs beside the test.
    rc, load, err = run_load(load_exe, svc.url, "--rate", "200", "--duration", "5", "--concurrency", "4",
                             "--seed", "3")
    bt.check(rc == 0 and load["payments_approved"] > 100, f"normal load ran ({rc}) {err.strip()}")
    for s in stacks:
        bt.wait_for(s.name + ": the recorded TPS to see the load",
                    lambda: (s.prom.scalar('job:billing_transactions:rate5m{job="billing"}') or 0) >= 1, 60)
        sel = 'max(job_gateway:billing_payment_decline_ratio:rate5m{job="billing"})'
        ratio = bt.wait_for(s.name + ": the decline ratio to be recorded", lambda: s.prom.scalar(sel) is not None
                            and [s.prom.scalar(sel)], 60)[0]
        bt.check(ratio < 0.25, f"{s.name}: normal load: decline ratio {ratio} < 0.25")
        bt.check(not s.firing("BillingTPSLow", "billing") and not s.firing("BillingPaymentDeclineRatioHigh", "billing"),
                 s.name + ": normal load: neither alert fires")

    # 2. A burst of declines from a second process of the service.
    burst = Billingd(billingd_exe, "--gateway-latency-ms", "0", "--decline-rate", "0.9", "--threads", "4",
                     env=env_of["billing"])
    svcs.append(burst)
    rc, load2, err = run_load(load_exe, burst.url, "--duration", "5", "--concurrency", "4", "--seed", "4")
    declined = load["payments_declined"] + load2["payments_declined"]
    payments = declined + load["payments_approved"] + load2["payments_approved"]
    bt.check(rc == 0 and declined > 0.5 * payments,
             f"decline burst ({rc}): {declined} of both loads' {payments} payments declined, over half "
             f"(the alert wants over 25 %) {err.strip()}")
    t_burst_end = time.monotonic()
    for s in stacks:
        got = bt.wait_for(s.name + ": BillingPaymentDeclineRatioHigh at the receiver",
                          lambda: s.received("BillingPaymentDeclineRatioHigh", "billing"), 120)
        done, _ = follow_runbook(s, got[0][1], "billing-probes top")
        want = ["billing-probes", "top", "--once", "--stats-dir", dirs["billing"]]
        bt.check([(d[0], shlex.split(d[1])) for d in done] == [("127.0.0.1", want)],
                 "%s: the decline alert's runbook names billing's host and its top command (%s)"
                 % (s.name, [(d[0], d[1]) for d in done]))
        bt.check(done and done[0][2] == 0 and re.search(r"^payments ", done[0][3], re.M) and not done[0][4],
                 "%s: that command, run as nobody, prints the service's figures (%s, %r)"
                 % (s.name, done[0][2] if done else None, (done[0][4] if done else "")[:300]))

    # 3. The load stopped: the rule's window empties, TPS-low fires.
    window = 300 / TIME_SCALE
    for s in stacks:
        got = bt.wait_for(s.name + ": BillingTPSLow at the receiver", lambda: s.received("BillingTPSLow", "billing"),
                          240)
        # Fewer than one transaction per second over the window: not before
        # two thirds of it have passed without any (the burst committed more
        # than the window's worth), whatever came before.
        after = got[0][0] - t_burst_end
        bt.check(after > window * 2 / 3,
                 f"{s.name}: the TPS alert reached the webhook receiver {after:.1f} s after the load stopped, not "
                 f"while transactions flowed (its rate window: {window:.0f} s on the test's clock)")

    # 4. The new user's service: the latency page, and the runbook to its trail.
    hour = 3600 / TIME_SCALE
    for s in stacks:
        got = bt.wait_for(s.name + ": BillingRequestLatencyBudgetBurnFast for checkout at the receiver",
                          lambda: s.received("BillingRequestLatencyBudgetBurnFast", "checkout"), 240)
        after = got[0][0] - t_checkout
        misses = s.prom.scalar('job:billing_request_slo_misses:ratio_rate1h{job="checkout"}') or 0
        due = FAST_BURN / misses * hour if misses else float("inf")  # when its misses spend 2 % of the budget
        print("%s: checkout's page %.1f s after its load began (%.1f min on the shipped clock); %.0f %% of its "
              "requests slow: due at %.1f s (%.1f min), then `for:` %.0f s"
              % (s.name, after, after * TIME_SCALE / 60, 100 * misses, due, due * TIME_SCALE / 60, 120 / TIME_SCALE))
        bt.check(0.3 < misses < 1 and 0.9 * due <= after <= due + 120 / TIME_SCALE + 20,
                 "%s: the new job paged %.1f s after it began, as its misses (%.0f %% of requests) passed 14.4 %% "
                 "of the share of the hour it was seen in: not before (%.1f s), nor long after"
                 % (s.name, after, 100 * misses, due))
        alert = got[0][1]
        done, printed = follow_runbook(s, alert, "billing-probes slow")
        first = printed.splitlines()[0].split() if printed.strip() else []
        bt.check(len(first) == 4 and first[1].isdigit() and float(first[0]) > 0.25,
                 "%s: the runbook's exemplars name a slow request of checkout (%r)" % (s.name, printed[:300]))
        want = ["billing-probes", "slow", "--stats-dir", dirs["checkout"], "--id", first[1] if first else "?"]
        bt.check([(d[0], shlex.split(d[1])) for d in done] == [("127.0.0.1", want)],
                 "%s: the runbook names checkout's host and the slow command for that request (%s)"
                 % (s.name, [(d[0], d[1]) for d in done]))
        out = done[0][3] if done else ""
        m = re.match(r"SLOW REQUEST (\d+) (\S+)  ([\d.]+) ms > 250\.000 ms, status -?\d+, \S+\.stats\n", out)
        gateway = [int(x) for x in re.findall(r"gateway-call-done .* duration_ns=(\d+)", out)]
        bt.check(done and done[0][2] == 0 and m and len(first) == 4 and m.group(1) == first[1]
                 and m.group(2) == first[2] and abs(float(m.group(3)) - 1000 * float(first[0])) < 0.001,
                 "%s: slow --id, run as nobody, prints that request's trail: its ID, handler and duration those "
                 "of the exemplar (%r)" % (s.name, out[:200] or (done[0][4] if done else "")))
        bt.check(gateway and min(gateway) >= GATEWAY_MS * 10**6,
                 "%s: the trail shows where the time went: the gateway's %d ms call (%s ns)"
                 % (s.name, GATEWAY_MS, gateway))
    for s in stacks:
        fast_job = s.prom.query('ALERTS{alertname=~"BillingRequestLatency.*",job="billing"}')
        bt.check(not fast_job, "%s: no latency alert for billing, whose requests are fast (%s)" % (s.name, fast_job))
finally:
    for p in loads:
        bt.stop_process(p)
    for svc in svcs:
        svc.cleanup()
    for s in stacks:
        s.cleanup()
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(base, ignore_errors=True)
bt.finish()

#!/usr/bin/env python3
"""The shipped alerts, end to end, from the stats path: billingd built with
stats, billing-exporter as nobody reading its segments (--stats-dir, no
BPF), a real Prometheus with a copy of monitoring/rules/billing.rules.yml on a
compressed clock (its `for:` durations shortened, every range and offset
divided by TIME_SCALE: the same rules, ten times faster; the shipped file
is untouched, and promtool's unit tests check the real windows), a real
Alertmanager (Debian's prometheus-alertmanager) and a webhook receiver
here.

  1. a normal load (2 % declines): neither alert fires;
  2. a burst of declines (a second billingd of the same service, 90 %
     declined): BillingPaymentDeclineRatioHigh fires and reaches the
     receiver;
  3. the load stopped: once its transactions leave the rule's 5 m rate
     window (30 s on the compressed clock), BillingTPSLow fires and
     reaches the receiver, never before that window empties.

Every wait is for a condition, with a deadline."""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "exporter"))
sys.path.insert(0, os.path.join(ROOT, "tests", "billingd"))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402
from billingdtest import Billingd, run_load  # noqa: E402

exe = h.env_path("BX_EXPORTER")
billingd_exe, load_exe = h.env_path("BS_BILLINGD"), h.env_path("BX_BILLING_LOAD")
if os.geteuid() != 0:
    bt.skip("runs the exporter as nobody over group-owned segments: needs root (CI runs as root)")
bt.require_program("prometheus", "prometheus")
am_exe = bt.require_program("prometheus-alertmanager", "prometheus-alertmanager")
bt.require_program("setpriv", "util-linux")
RULES = os.path.join(ROOT, "monitoring", "rules", "billing.rules.yml")
SHORT_FOR = "3s"
TIME_SCALE = 10  # the test's rule copy: [5m] -> [30s], offset 1h -> offset 360s
UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def compressed(text):
    """The rules with `for:` shortened and every range and offset divided
    by TIME_SCALE; (text, ranges changed)."""
    text, n_for = re.subn(r"(?m)^(\s+for:\s*)\S+\s*$", r"\g<1>" + SHORT_FOR, text)

    def scale(m):
        seconds = int(m.group(2)) * UNIT_S[m.group(3)]
        return "%s%ds%s" % (m.group(1), seconds // TIME_SCALE, m.group(4))
    text, n_range = re.subn(r"(\[|offset )(\d+)([smhd])(\]|\b)", scale, text)
    return text, n_for, n_range


class Receiver(http.server.BaseHTTPRequestHandler):
    got = []  # (time, alertname, status) per alert in each notification
    lock = threading.Lock()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with Receiver.lock:
            for a in body.get("alerts", []):
                Receiver.got.append((time.monotonic(), a.get("labels", {}).get("alertname"), a.get("status")))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def received(name):
    with Receiver.lock:
        return [g for g in Receiver.got if g[1] == name and g[2] == "firing"]


def firing(prom, name):
    return any(r["metric"].get("alertstate") == "firing"
               for r in prom.query(f'ALERTS{{alertname="{name}"}}'))


base = tempfile.mkdtemp(prefix="billing-alerts-")
os.chmod(base, 0o755)
procs, svcs, prom = [], [], None
try:
    # The test's copy of the rules: `for:` shortened, nothing else.
    text = open(RULES).read()
    short, n, n_range = compressed(text)
    bt.check(n >= 2 and n_range >= 10, f"the test's rule copy shortens {n} for: durations and {n_range} ranges and offsets")
    rules = os.path.join(base, "billing.rules.yml")
    open(rules, "w").write(short)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    am_port = h.free_port()
    am_cfg = os.path.join(base, "alertmanager.yml")
    json.dump({"route": {"receiver": "hook", "group_by": ["alertname"], "group_wait": "1s",
                         "group_interval": "1s", "repeat_interval": "1h"},
               "receivers": [{"name": "hook", "webhook_configs": [
                   {"url": f"http://127.0.0.1:{server.server_address[1]}/", "send_resolved": False}]}]},
              open(am_cfg, "w"))
    am_log = open(os.path.join(base, "alertmanager.log"), "w+")
    am = subprocess.Popen([am_exe, "--config.file", am_cfg, "--storage.path", os.path.join(base, "am"),
                           "--web.listen-address", f"127.0.0.1:{am_port}", "--cluster.listen-address="],
                          stdout=am_log, stderr=subprocess.STDOUT)
    procs.append(am)

    def am_ready():
        if am.poll() is not None:
            raise RuntimeError("alertmanager exited: " + open(am_log.name).read()[-500:])
        try:
            return h.http_get(f"http://127.0.0.1:{am_port}/-/ready")[0] == 200
        except OSError:
            return False
    bt.wait_for("Alertmanager ready", am_ready, 60)

    # The service: billingd processes sharing one stats directory, read by
    # the exporter as nobody through the group.
    stats = os.path.join(base, "stats")
    os.environ.update(BILLING_STATS_DIR=stats, BILLING_STATS_GROUP="nogroup")
    svc = Billingd(billingd_exe, "--gateway-latency-ms", "0", "--decline-rate", "0.02", "--threads", "4")
    svcs.append(svc)
    exporter = h.Exporter("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", exe,
                          "--stats-dir", stats)
    procs.append(exporter.proc)
    bt.check("0 probe attachments on 0 target(s), 1 stats target(s)" in exporter.output(),
             "the exporter runs as nobody with no BPF")

    # Prometheus: the harness's, reloaded with alerting to our Alertmanager.
    prom = h.Prometheus([f"127.0.0.1:{exporter.port}"], rule_files=[rules])
    cfg_path = os.path.join(prom.dir, "prometheus.yml")
    cfg = json.load(open(cfg_path))
    cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]}
    json.dump(cfg, open(cfg_path, "w"))
    urllib.request.urlopen(urllib.request.Request(prom.url + "/-/reload", method="POST"), timeout=10)
    bt.wait_for("Prometheus to scrape the exporter", lambda: prom.scalar('up{job="billing-exporter"}') == 1, 60)
    bt.wait_for("Prometheus to know the Alertmanager",
                lambda: json.loads(h.http_get(prom.url + "/api/v1/alertmanagers")[2])["data"]["activeAlertmanagers"], 60)

    # 1. A normal load: the service is healthy.  At a fixed rate, so that its
    # size does not depend on how fast the machine is at that moment: the
    # burst below must outweigh it whatever runs beside the test.
    rc, load, err = run_load(load_exe, svc.url, "--rate", "200", "--duration", "5", "--concurrency", "4",
                             "--seed", "3")
    bt.check(rc == 0 and load["payments_approved"] > 100, f"normal load ran ({rc}) {err.strip()}")
    bt.wait_for("the recorded TPS to see the load", lambda: (prom.scalar("job:billing_transactions:rate5m") or 0) >= 1, 60)
    bt.wait_for("the decline ratio to be recorded",
                lambda: prom.scalar("max(job_gateway:billing_payment_decline_ratio:rate5m)") is not None, 60)
    ratio = prom.scalar("max(job_gateway:billing_payment_decline_ratio:rate5m)")
    bt.check(ratio is not None and ratio < 0.25, f"normal load: decline ratio {ratio} < 0.25")
    bt.check(not firing(prom, "BillingTPSLow") and not firing(prom, "BillingPaymentDeclineRatioHigh"),
             "normal load: neither alert fires")
    t_load_end = time.monotonic()

    # 2. A burst of declines from a second process of the service.
    burst = Billingd(billingd_exe, "--gateway-latency-ms", "0", "--decline-rate", "0.9", "--threads", "4")
    svcs.append(burst)
    rc, load2, err = run_load(load_exe, burst.url, "--duration", "5", "--concurrency", "4", "--seed", "4")
    declined = load["payments_declined"] + load2["payments_declined"]
    payments = declined + load["payments_approved"] + load2["payments_approved"]
    bt.check(rc == 0 and declined > 0.5 * payments,
             f"decline burst ({rc}): {declined} of both loads' {payments} payments declined, over half "
             f"(the alert wants over 25 %) {err.strip()}")
    bt.wait_for("BillingPaymentDeclineRatioHigh at the receiver", lambda: received("BillingPaymentDeclineRatioHigh"), 120)
    bt.check(received("BillingPaymentDeclineRatioHigh"), "the decline alert reached the webhook receiver")
    t_burst_end = time.monotonic()

    # 3. The load stopped: the rule's window empties, TPS-low fires.
    window = 300 / TIME_SCALE
    bt.wait_for("BillingTPSLow at the receiver", lambda: received("BillingTPSLow"), 240)
    got = received("BillingTPSLow")
    # Fewer than one transaction per second over the window: not before
    # two thirds of it have passed without any (the burst committed more
    # than the window's worth), whenever the decline alert came.
    after = got[0][0] - t_burst_end if got else None
    bt.check(after is not None and after > window * 2 / 3,
             f"the TPS alert reached the webhook receiver {after} s after the load stopped, not while "
             f"transactions flowed (its rate window: {window:.0f} s on the test's clock)")
finally:
    for svc in svcs:
        svc.cleanup()
    if prom:
        prom.cleanup()
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(base, ignore_errors=True)
bt.finish()

#!/usr/bin/env python3
"""/metrics is revenue per currency (issue 20, finding 4): served to anyone
who could reach the port.  Replayed as a network client:

- `--listen 0.0.0.0:PORT` without TLS is refused (one line, exit 2);
  `--listen-insecure` is the explicit way to serve it in clear;
- with --web-config (exporter-toolkit's YAML: tls_server_config,
  basic_auth_users with a bcrypt hash), a client without credentials or
  with a wrong password or unknown user gets 401, plain HTTP gets no
  answer, the right password gets 200 and a promtool-clean exposition;
  /healthz answers anyone (readiness probes);
- a real Prometheus scraping over TLS (tls_config ca_file, basic_auth)
  has its target up; the same target scraped without credentials and
  with a wrong password is down with 401;
- with client_ca_file, a client without a certificate or with one from
  another CA gets 403, one with a certificate the CA signed gets 200;
- a bad web config (unknown key, a hash that is not bcrypt, missing or
  mismatched key files, not YAML...) is one line and exit 2.

On the code before, the exporter served 0.0.0.0 in clear and knew no
--web-config.  Needs no root: the exporter's target is an empty
--stats-dir; the Prometheus part needs the prometheus package."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

exe = h.env_path("BX_EXPORTER")
bt.require_program("promtool", "prometheus")
bt.require_program("prometheus", "prometheus")
pki = st.Pki()
target = st.stats_only_args(pki.dir)
PASSWORD = "correct horse battery staple"
HASH = st.bt.bcrypt(PASSWORD)


def refused(what, args, want):
    """args must exit 2 with one stderr line containing want (still
    running after 10 s: it took them and serves)."""
    try:
        r = bt.run([exe, *target, *args], timeout=10)
        rc, err = r.returncode, r.stderr or ""
    except subprocess.TimeoutExpired:
        rc, err = "still serving after 10 s", ""
    lines = err.strip().splitlines()
    bt.check(rc == 2 and len(lines) == 1 and want in lines[0],
             "%s: exit 2, one line with %r (got %s: %r)" % (what, want, rc, err))


exporters = []
prom = None
try:
    # --- in clear, beyond loopback: refused unless asked for -------------------------
    refused("--listen 0.0.0.0 without TLS", ["--listen", "0.0.0.0:0"], "--listen-insecure")
    refused("--listen [::] without TLS", ["--listen", "[::]:0"], "--listen-insecure")
    basic_only = pki.web_config("basic_auth_users:\n  prometheus: %s\n" % HASH, "basic-only.yml")
    refused("--listen 0.0.0.0 with basic auth but no TLS", ["--listen", "0.0.0.0:0", "--web-config", basic_only],
            "--listen-insecure")
    ex = h.Exporter(exe, *target, "--listen-insecure", listen="0.0.0.0:0")
    exporters.append(ex)
    bt.check(st.get("http://127.0.0.1:%d/healthz" % ex.port)[0] == 200,
             "--listen 0.0.0.0 --listen-insecure serves in clear, as asked")

    # --- bad web configs ------------------------------------------------------------
    good_tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    for what, text, want in [
        ("unknown top-level key", good_tls + "basic_auth_user:\n  a: %s\n" % HASH, "basic_auth_user"),
        ("unknown TLS key", good_tls + "  min_versoin: TLS12\n", "min_versoin"),
        ("a plain password for a hash", "basic_auth_users:\n  prometheus: hunter2\n", "bcrypt"),
        ("an MD5 crypt hash", "basic_auth_users:\n  p: $1$abcdefgh$Qw9o3zPRfdDdTtnbKRqCH/\n", "bcrypt"),
        ("a missing key file", "tls_server_config:\n  cert_file: server.crt\n  key_file: nowhere.key\n",
         "nowhere.key"),
        ("a key that is not the certificate's", "tls_server_config:\n  cert_file: server.crt\n"
         "  key_file: client.key\n", "key_file"),
        ("a certificate without its key", "tls_server_config:\n  cert_file: server.crt\n", "key_file"),
        ("a weaker client policy", good_tls + "  client_ca_file: ca.crt\n  client_auth_type: RequestClientCert\n",
         "client_auth_type"),
        ("a key given twice", good_tls + "  cert_file: server.crt\n", "twice"),
        ("not YAML", "tls_server_config: [\n", "line"),
        ("a list for the users", "basic_auth_users:\n  - prometheus\n", "basic_auth_users"),
    ]:
        refused("web config with " + what, ["--listen", "127.0.0.1:0", "--web-config",
                                            pki.web_config(text, "bad.yml")], want)
    refused("a web config that does not exist", ["--listen", "127.0.0.1:0", "--web-config", pki.path("none.yml")],
            "none.yml")

    # --- TLS and basic auth ---------------------------------------------------------
    web = pki.web_config(good_tls + "basic_auth_users:\n  prometheus: %s\n" % HASH)
    ex = h.Exporter(exe, *target, "--web-config", web, listen="0.0.0.0:0")
    exporters.append(ex)
    url = "https://127.0.0.1:%d" % ex.port
    ca = pki.path("ca.crt")
    bt.check(ex.url.startswith("https://"), "it says it serves https (%s)" % ex.url)
    status, _ = st.get(url + "/metrics", cafile=ca)
    bt.check(status == 401, "/metrics without credentials: 401 (got %s)" % status)
    status, _ = st.get(url + "/metrics", "prometheus", PASSWORD + "x", cafile=ca)
    bt.check(status == 401, "/metrics with a wrong password: 401 (got %s)" % status)
    status, _ = st.get(url + "/metrics", "root", PASSWORD, cafile=ca)
    bt.check(status == 401, "/metrics as an unknown user with the password: 401 (got %s)" % status)
    status, text = st.get("http://127.0.0.1:%d/metrics" % ex.port, "prometheus", PASSWORD)
    bt.check(status == 0, "/metrics in plain HTTP on the TLS port: no answer (got %s)" % status)
    status, body = st.get(url + "/metrics", "prometheus", PASSWORD, cafile=ca)
    bt.check(status == 200 and "billing_exporter_" in body, "/metrics with the password: 200 (got %s)" % status)
    status, _ = st.get(url + "/healthz", cafile=ca)
    bt.check(status == 200, "/healthz without credentials: 200 (got %s)" % status)
    r = subprocess.run(["promtool", "check", "metrics"], input=body, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    bt.check(r.returncode == 0, "promtool check metrics accepts the exposition over TLS (%s)" % r.stdout.strip())

    # --- a real Prometheus --------------------------------------------------------------
    def job(name, auth):
        cfg = {"job_name": name, "scheme": "https", "tls_config": {"ca_file": ca},
               "static_configs": [{"targets": ["127.0.0.1:%d" % ex.port]}]}
        if auth:
            cfg["basic_auth"] = {"username": auth[0], "password": auth[1]}
        return cfg
    prom = h.Prometheus([], scrape_configs=[job("with-password", ("prometheus", PASSWORD)),
                                            job("wrong-password", ("prometheus", "guess")),
                                            job("no-credentials", None)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        seen = prom.targets()
        if len(seen) == 3 and all(v[0] != "unknown" for v in seen.values()):
            break
        time.sleep(0.5)
    bt.check(seen.get("with-password", ("",))[0] == "up",
             "Prometheus over TLS with basic auth: target up (%s)" % (seen.get("with-password"),))
    for name in ("wrong-password", "no-credentials"):
        health, err = seen.get(name, ("", ""))
        bt.check(health == "down" and "401" in err, "Prometheus %s: target down with 401 (%s, %r)" % (name, health, err))
    got = prom.scalar('billing_exporter_target_up{job="with-password"}')
    bt.check(got is not None, "Prometheus stored the exporter's samples scraped over TLS (%s)" % got)
    prom.cleanup()
    prom = None

    # --- client certificates ----------------------------------------------------------
    mtls = pki.web_config(good_tls + "  client_ca_file: ca.crt\n", "mtls.yml")
    ex = h.Exporter(exe, *target, "--web-config", mtls, listen="127.0.0.1:0")
    exporters.append(ex)
    url = "https://127.0.0.1:%d" % ex.port
    status, _ = st.get(url + "/metrics", cafile=ca)
    bt.check(status in (0, 403), "client_ca_file: no client certificate, no metrics (got %s)" % status)
    status, _ = st.get(url + "/metrics", cafile=ca, cert=(pki.path("stranger.crt"), pki.path("stranger.key")))
    bt.check(status in (0, 403), "client_ca_file: a certificate of another CA, no metrics (got %s)" % status)
    status, _ = st.get(url + "/metrics", cafile=ca, cert=(pki.path("client.crt"), pki.path("client.key")))
    bt.check(status == 200, "client_ca_file: a certificate it signed, 200 (got %s)" % status)
finally:
    if prom:
        prom.cleanup()
    for ex in exporters:
        ex.stop()
    pki.cleanup()
bt.finish()

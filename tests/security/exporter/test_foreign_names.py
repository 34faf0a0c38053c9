#!/usr/bin/env python3
"""A family a segment describes stays in its own namespace (issue 46,
finding 2).  The exporter serves the families of another billing.d from a
segment's own description; it refused only a family whose exact name its
table held.  A service user's segment could serve `up`, `scrape_*`, names
under `billing_exporter_`, a table histogram's own `_count`, and any label
name: in the shipped fleet, `up{host="victim-host"} 0` from host-a paged
for victim-host and hid it from BillingHostSilent.

The unprivileged test user writes one segment of another billing.d (the
stats tests' variant: a coupon-apply probe feeding
billing_coupons_applied_total, by campaign), its description given one
more family on that map per case below, rows whose campaign is
"victim-host"; the exporter reads that user's directory (--stats-dir,
--uid).  Each hostile family must be refused in one line naming it, and
nothing of it served (text and OpenMetrics, promtool clean); the honest
family beside them is served.  The label names refused are read from the
shipped configs (every external_labels, static_configs labels and
relabel target_label of deploy/ and monitoring/prometheus.yml, plus job
and instance), so a label the recipes start to attach cannot drift out.
Before: every one served."""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "stats"))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402
import statstest as stt  # noqa: E402

try:
    import yaml
except ImportError:
    bt.skip("PyYAML is not installed (python3-yaml; tests/install-deps.sh installs it)")

exe = h.env_path("BX_EXPORTER")
uid, gid, _ = bt.attacker()
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HONEST = "billing_coupons_applied_total"
st.check_documented(["BX_FOREIGN_RESERVED_NAMES", "BX_FOREIGN_RESERVED_PREFIXES", "BX_FOREIGN_RESERVED_LABELS"])


def attached_labels():
    """{label name: where} that scrapes and the shipped configs attach."""
    out = {"job": "every scrape", "instance": "every scrape"}
    paths = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(ROOT, "deploy")) for f in fs
             if f.endswith((".yml", ".yaml"))] + [os.path.join(ROOT, "monitoring", "prometheus.yml")]
    for path in paths:
        where = os.path.relpath(path, ROOT)
        for doc in yaml.safe_load_all(open(path)):
            if not isinstance(doc, dict) or not ({"global", "scrape_configs", "remote_write"} & set(doc)):
                continue
            for name in ((doc.get("global") or {}).get("external_labels") or {}):
                out[name] = where
            for sc in doc.get("scrape_configs") or []:
                for group in sc.get("static_configs") or []:
                    for name in group.get("labels") or {}:
                        out[name] = where
                for key in ("relabel_configs", "metric_relabel_configs"):
                    for rule in sc.get(key) or []:
                        if rule.get("target_label") and not rule["target_label"].startswith("__"):
                            out[rule["target_label"]] = where
    return out


LABELS = attached_labels()
bt.check({"host", "service", "billing_probes"} <= set(LABELS),
         "the shipped configs attach host, service and billing_probes (%s)" % sorted(LABELS))
# (family name, label name, why it is not the segment's to take)
CASES = [("up", "campaign", "Prometheus's own"), ("scrape_duration_seconds", "campaign", "Prometheus's own"),
         ("scrape_forged_total", "campaign", "Prometheus's scrape_ prefix"),
         ("ALERTS", "campaign", "Prometheus's own"),
         ("billing_exporter_forged_total", "campaign", "the exporter's own prefix"),
         ("billing_request_duration_seconds_count", "campaign", "a table histogram's _count"),
         ("billing_request_duration_seconds_bucket", "campaign", "a table histogram's _bucket"),
         ("billing_invoices_created", "campaign", "a table counter's _created"),
         ("billing_invoices", "campaign", "a table counter's OpenMetrics family"),
         ("billing_coupons_applied_count", "campaign", "the honest foreign family's series")]
CASES += [("billing_forged_by_%s_total" % name, name, "label %s, attached by %s" % (name, where))
          for name, where in sorted(LABELS.items())]


def description(text):
    """The variant's description with one family per case on coupon-apply's map."""
    honest = "family %s counter count - -\nhelp Coupons applied, by campaign.\nlabel campaign value campaign\n" % HONEST
    assert honest in text, "the variant's description changed"
    extra = "".join("family %s counter count - -\nhelp Forged.\nlabel %s value campaign\n" % (name, label)
                    for name, label, _ in CASES)
    return text.replace(honest, honest + extra)


with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
    os.chmod(tmp, 0o755)
    ms = stt.billing_d.parse(stt.variant_provider(tmp)).metrics
    rows = {"coupon__apply": [(["victim-host"], [7])]}
    d = os.path.join(tmp, "attacker")
    os.mkdir(d, 0o700)
    os.chown(d, uid, gid)

    import stats_emit  # the generator's half, which write_segment lays the description out from
    generated = stats_emit.description
    stats_emit.description = lambda metric_set: description(generated(metric_set))

    def write(report):
        """As the attacker: the segment, with the hostile families in its description."""
        path = os.path.join(d, "%d.stats" % os.getpid())
        stt.write_segment(path, ms, rows)
        report({"written": path})
    who = st.AsAttacker(write)
    path = who.wait("the attacker's segment", lambda r: "written" in r)["written"]
    who.stop()
    ex = h.Exporter(exe, "--stats-dir", d, "--uid", str(uid), "--metrics", "all")
    try:
        _, text = ex.metrics()
        _, om = ex.metrics(accept="application/openmetrics-text; version=1.0.0")
    finally:
        _, log = ex.stop()

# Every row of the segment is campaign "victim-host": a line that carries
# it and is not the honest family's is a hostile family served.
victim = [line for line in (text + om).splitlines() if "victim-host" in line]
bt.check(h.total(h.parse_exposition(text), HONEST, campaign="victim-host") == 7,
         "the honest foreign family beside them is served: %s{campaign=\"victim-host\"} 7" % HONEST)
for name, label, why in CASES:
    said = [line for line in log.splitlines() if "family %s " % name in line and "not served" in line]
    served = [line for line in victim if re.match(r"%s[{ ]" % re.escape(name), line)]
    bt.check(len(said) == 1 and not served,
             "%s {%s} (%s): refused in one line, nothing served (%s; served %s)"
             % (name, label, why, said[0].split(": ", 1)[-1] if said else "no line", served))
bt.check(all(line.startswith(HONEST + "{") for line in victim),
         "no other series of the segment served (%s)" % [x for x in victim if not x.startswith(HONEST + "{")])
bt.check('host="' not in text + om and not re.search(r"(?m)^up[{ ]", text + om),
         "no series named up, none with a host label, in text or OpenMetrics")
promtool = bt.run(["promtool", "check", "metrics"], input=text) if os.path.exists("/usr/bin/promtool") else None
bt.check(promtool is None or promtool.returncode == 0,
         "promtool check metrics passes (%s)" % ((promtool.stdout + promtool.stderr).strip()[-300:] if promtool else
                                                 "no promtool"))
bt.finish()

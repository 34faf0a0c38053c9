#!/usr/bin/env python3
"""The metric table: agrees with billing.d (the exporter's own check
against the catalogue, and an independent read of billing.d here), keeps
Prometheus naming, attaches no -start probe, and docs/exporter.md carries
exactly the table the exporter prints."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exe = h.env_path("BX_EXPORTER")
p = subprocess.run([exe, "--check-table"], capture_output=True, text=True)
bt.check(p.returncode == 0, "billing-exporter --check-table: " + (p.stdout + p.stderr).strip())

table = subprocess.run([exe, "--print-metric-table"], capture_output=True, text=True, check=True).stdout
rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
bt.check(len(rows) > 10, "the table has rows (%d)" % len(rows))

probes = {bt.elf_name(name) for prov, name, _ in bt.provider_probes() if prov == "billing"}
for name, mtype, unit, labels, group, probe, _help in rows:
    name = name.strip("`")
    if probe != "-":
        bt.check(probe in probes, "%s: probe %s is declared in billing.d" % (name, probe))
        bt.check(not probe.endswith("__start"), "%s: no -start probe attached (%s)" % (name, probe))
    bt.check(re.fullmatch(r"billing_[a-z_]+", name) is not None, "%s: billing_ namespace, snake case" % name)
    bt.check((mtype == "counter") == name.endswith("_total"), "%s: _total exactly on counters" % name)
    if unit == "seconds":
        bt.check(name.endswith("_seconds") or name.endswith("_seconds_total"), "%s: base unit in name" % name)
    if mtype == "histogram":
        bt.check(labels.endswith("le"), "%s: histogram with le buckets" % name)
default_groups = {r[4] for r in rows if r[4] in ("business", "requests")}
bt.check(default_groups == {"business", "requests"}, "business and requests groups exist")

doc = open(os.path.join(h.SOURCE_ROOT, "docs", "exporter.md"), encoding="utf-8").read()
m = re.search(r"<!-- metric-table begin[^>]*-->\n(.*?)<!-- metric-table end -->", doc, re.S)
bt.check(m is not None, "docs/exporter.md has the metric-table markers")
bt.check(m is not None and m.group(1) == table,
         "docs/exporter.md's metric table is what `billing-exporter --print-metric-table` prints "
         "(regenerate it with that command)")
bt.finish()

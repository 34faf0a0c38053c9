#!/usr/bin/env python3
"""The metric table: agrees with billing.d (the exporter's own check
against the catalogue, and an independent read of billing.d here), keeps
Prometheus naming and attaches no -start probe.  (docs/exporter.md carries
the table as printed: docs/write.py.)"""
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
bt.finish()

#!/usr/bin/env python3
"""The run-time catalogue names billing.d's probes, in order, with their types.

Usage: test_catalogue_matches.py CATALOGUE_DUMP

CATALOGUE_DUMP prints the catalogue compiled into libbillingprobes (from
provider/generate.py's parser); billingtest.provider_probes() reads
billing.d with a regex of its own, so a slip in either shows.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

TYPE_NAMES = {"unsigned long long": "uint64", "long long": "int64", "int": "int32", "char *": "string"}

lines = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout.splitlines()
catalogue = [line.split() for line in lines]
declared = bt.provider_probes()
bt.check(len(catalogue) == len(declared), "the catalogue has %d probes, billing.d declares %d"
         % (len(catalogue), len(declared)))
for row, (provider, name, types) in zip(catalogue, declared):
    want = [provider, name, bt.elf_name(name)] + [TYPE_NAMES.get(" ".join(t.split()), "?" + t) for t in types]
    bt.check(row == want, "%s: catalogue %s, billing.d %s" % (name, " ".join(row), " ".join(want)))
    bt.check(len(types) <= 6, "%s: at most 6 arguments (bpftrace reads arg0..arg5)" % name)
bt.finish()

#!/usr/bin/env python3
"""docs/probes.md's recipe for a team's own probe that feeds a metric,
followed as written: its billing.d block pasted into a copy of
provider/billing.d (before the provider's closing brace), and the
generator run on it.  The new probe and its metric must come out of the
"@@" lines alone -- the exporter's metric table, the stats writer's entry
point and the self-description a segment carries -- with no other file
edited.  The page must not send anyone to edit a generated table by hand.

On the code before, probes.md told a team to "add a row to the
exporter's metric table", which is generated, and showed no @@ line.

usage: test_probe_recipe.py SOURCE_ROOT"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

source = sys.argv[1]
page = open(os.path.join(source, "docs", "probes.md"), encoding="utf-8").read()
section = page[page.find("## Adding a probe"):]
section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
blocks = re.findall(r"```c\n(.*?)```", section, re.S)
bt.check(len(blocks) == 1, "docs/probes.md's recipe shows one billing.d block (%d)" % len(blocks))
bt.check(not re.search(r"add a row|edit the (exporter's )?metric table", section),
         "the recipe does not send anyone to edit the generated metric table")
if not blocks:
    bt.finish()
block = blocks[0]
probe = re.search(r"probe (\w+)\(", block)
metric = re.search(r"@@(?:counter|histogram) (\w+)", block)
bt.check(probe and metric, "the block declares a probe and a metric it feeds")
if not (probe and metric):
    bt.finish()
probe, metric = probe.group(1), metric.group(1)

generate = os.path.join(source, "provider", "generate.py")
with tempfile.TemporaryDirectory(prefix="probe-recipe-") as tmp:
    for name in os.listdir(os.path.join(source, "provider")):
        if name.endswith(".txt"):  # the known-value files billing.d names
            shutil.copy(os.path.join(source, "provider", name), tmp)
    text = open(os.path.join(source, "provider", "billing.d"), encoding="utf-8").read()
    end = text.index("\n};\n")
    d = os.path.join(tmp, "billing.d")
    with open(d, "w", encoding="utf-8") as f:
        f.write(text[:end] + "\n" + block.rstrip("\n") + text[end:])

    def gen(command):
        r = subprocess.run([sys.executable, generate, d, command, "-"], capture_output=True, text=True, timeout=120)
        bt.check(r.returncode == 0, "generate.py %s on billing.d with the recipe's block (%s)"
                 % (command, r.stderr.strip()[-300:]))
        return r.stdout

    table = gen("metric-table-gen-h")
    bt.check('"%s"' % metric in table, "the exporter's metric table names %s, fed by %s" % (metric, probe))
    stats_h = gen("stats-gen-h")
    bt.check(re.search(r"billing_stats_%s\(" % probe.replace("__", "_"), stats_h) is not None,
             "the stats writer has an entry point for %s" % probe)
    desc = gen("stats-desc-c")
    bt.check(re.search(r"^ \* map \S+ probe=%s " % probe, desc, re.M) is not None
             and re.search(r"^ \* family %s " % metric, desc, re.M) is not None,
             "the segment's self-description names %s and the map %s feeds (what an exporter of another "
             "build serves)" % (metric, probe))
bt.finish()

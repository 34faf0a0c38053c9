#!/usr/bin/env python3
"""Every BILLING_STATS*=VALUE example in the pages (README.md and every
other .md of the tree) runs as written, through the stats writer's own
settings reader (settings_examples.c: no segment made, no directory
touched), each alone in an environment without any other BILLING_STAT*
name; a fenced code line's leading assignments run together, as the shell
would give them:

- a page that shows the line a value prints ("billing-probes: pid N:
  VAR=VALUE: ...") gets that very line, and only it (the pid aside);
- any other example is taken: nothing said.  An example naming a group
  this host lacks (BILLING_STATS_GROUP=metrics) is taken as a group name:
  its only line says there is no such group here.

On the code before, docs/stats.md's BILLING_STATS_SLOW examples (300ms,
2s) were refused: neither is a bound of the duration buckets.

usage: test_settings_examples.py SOURCE_ROOT SETTINGS_EXAMPLES"""
import grp
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

source, program = sys.argv[1:3]
SHOWN = re.compile(r"billing-probes: pid \d+: (BILLING_STAT\w*)=(\S*?): (.*)$")
EXAMPLE = re.compile(r"(?<![\w$])(BILLING_STAT\w*)=([^\s`'\"();<>|&]*)")
FENCE = re.compile(r"^\s*(```|~~~)")


def pages():
    for d, dirs, files in os.walk(source):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "build")) and x != "node_modules")
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(d, f)


def value_of(v):
    return v.rstrip(".,:")


def examples(text):
    """([(VAR, VALUE), ...] to run together, line number) of each
    example; and {(VAR, VALUE): (shown line, line number)}."""
    runs, shown, fenced = [], {}, False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = SHOWN.search(line)
        if m:
            shown[(m.group(1), m.group(2))] = (line[m.start():].strip(), n)
            continue
        found = [(a, value_of(v)) for a, v in EXAMPLE.findall(line)]
        if not found:
            continue
        lead = re.match(r"^\s*(?:\$ )?((?:BILLING_STAT\w*=\S*\s+)+)", line) if fenced else None
        together = [(a, value_of(v)) for a, v in EXAMPLE.findall(lead.group(1))] if lead else []
        if together:
            runs.append((together, n))
        runs += [([x], n) for x in found if x not in together]
    return runs, shown


def settings(assignments):
    """(stderr lines with the pid as N, "on"/"off") for the assignments."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_STAT")}
    env.update(dict(assignments))
    p = subprocess.run([program], env=env, capture_output=True, text=True, timeout=30)
    lines = [re.sub(r"^billing-probes: pid \d+: ", "billing-probes: pid N: ", l) for l in p.stderr.splitlines()]
    return lines, p.stdout.strip()


def no_group_here(assignments, lines):
    """The one line a group this host lacks prints, for an example that names one."""
    groups = [v for a, v in assignments if a == "BILLING_STATS_GROUP" and not re.fullmatch(r"\d+", v)]
    missing = []
    for g in groups:
        try:
            grp.getgrnam(g)
        except KeyError:
            missing.append(g)
    return bool(missing) and len(lines) == 1 and "BILLING_STATS_GROUP=%s: no such group" % missing[0] in lines[0]


total, refused = 0, 0
for path in pages():
    rel = os.path.relpath(path, source)
    runs, shown = examples(open(path, encoding="utf-8").read())
    for (var, value), (line, n) in sorted(shown.items()):
        refused += 1
        lines, _ = settings([(var, value)])
        want = re.sub(r"^billing-probes: pid \d+: ", "billing-probes: pid N: ", line)
        bt.check(lines == [want], "%s:%d: %s=%s prints the line shown (%r)" % (rel, n, var, value, lines))
    for assignments, n in runs:
        total += 1
        what = " ".join("%s=%s" % x for x in assignments)
        if len(assignments) == 1 and assignments[0] in shown:
            continue  # shown refused, with its line: checked above
        lines, state = settings(assignments)
        lacking = bool(lines) and no_group_here(assignments, lines)
        bt.check(not lines or lacking, "%s:%d: %s is taken, %s (%s%s)" % (
            rel, n, what, "as the name of a group this host lacks" if lacking else "nothing said", state,
            "; " + " | ".join(lines) if lines and not lacking else ""))
bt.check(total >= 10 and refused >= 5, "the pages hold BILLING_STATS* examples (%d) and refused values with their "
         "lines (%d)" % (total, refused))
bt.finish()

#!/usr/bin/env python3
"""Every figure in README.md, docs/*.md, bench/README.md and
monitoring/README.md comes from the file that holds it (docs/figures.py):

  - each generated figure (a marker) equals what its source gives now:
    bench/results/latest.json, provider/billing.d, the alert rules; and
    bench/README.md's summary and bench/results/latest.md equal what
    bench/run_bench.py renders from latest.json;
  - no number with a unit stands in prose without a source: a marker, or
    an entry of FROM_SOURCE (a figure the code or a test is set to);
  - each FROM_SOURCE figure is still in its page, and its source still
    holds it.

A failure names the page, the line and the figure; `python3
docs/figures.py --write` rewrites generated figures.

usage: test_figures.py SOURCE_ROOT"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.abspath(sys.argv[1]), "docs"))
import figures  # noqa: E402

out, unknown = figures.generated()
bt.check(not unknown, "every figure marker is known to docs/figures.py (unknown: %s)" % (unknown or "none"))
for rel, (now, new) in sorted(out.items()):
    if now != new:
        changed = [(n, a, b) for n, (a, b) in enumerate(zip(now.splitlines(), new.splitlines()), 1) if a != b]
        n, a, b = changed[0] if changed else (0, "", "(lines added or removed)")
        bt.check(False, "%s: figures equal their sources (line %d says %r, its source gives %r)" % (rel, n, a, b))
    else:
        bt.check(True, "%s: figures equal their sources" % rel)
loose = figures.unsourced()
for rel, n, fig in loose:
    bt.check(False, "%s:%d: %r has a source (a marker or FROM_SOURCE)" % (rel, n, fig))
bt.check(not loose, "no figure in prose without a source (%d pages)" % len(figures.pages()))
for problem in figures.broken_ties():
    bt.check(False, problem)
bt.check(len(figures.FROM_SOURCE) > 0 and not figures.broken_ties(),
         "the %d figures set in code or tests still hold in their sources" % len(figures.FROM_SOURCE))
bt.finish()

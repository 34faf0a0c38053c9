#!/usr/bin/env python3
"""Every figure in README.md, docs/*.md, bench/README.md and
monitoring/README.md comes from the file that holds it (docs/figures.py),
and a measured figure from a run that is current:

  - each generated figure (a marker) equals what its source gives now:
    a results file of bench/results, provider/billing.d, the alert rules;
    and bench/README.md's summary and each bench/results/PART.md equal
    what bench/run_bench.py renders from the results files;
  - each results file is one run: {"run": its stamp (commit, CPU model,
    kernel, date, the paths it measures), "data": its figures}, no other
    run's date or machine inside;
  - a page quotes no figure of a run older than the code it measures: no
    commit after the run's touches a path the run measures (git log);
  - no number with a unit stands in prose without a source: a marker, or
    an entry of FROM_SOURCE (a figure the code or a test is set to);
  - each FROM_SOURCE figure is still in its page, and its source still
    holds it.

A failure names the page, the figure and the file; `python3
docs/figures.py --write` rewrites generated figures, and a stale or
unstamped run is measured again (bench/README.md says how).

usage: test_figures.py SOURCE_ROOT"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.abspath(sys.argv[1]), "docs"))
import figures  # noqa: E402

# The refusals themselves, on runs made up here: each kind must be caught.
STAMP = {"commit": "HEAD", "date": "2026-11-28 00:00 UTC", "cpu": "c", "kernel": "k", "measures": ["docs"]}
root = figures.git("rev-list", "--max-parents=0", "HEAD")
bt.check(any("is not one run" in p for p in figures.problems_of({"date": "2026-11-28", "untraced": {}})),
         "a results file without a run stamp is refused")
bt.check(any("does not record its cpu" in p for p in figures.problems_of({"run": dict(STAMP, cpu=None), "data": {}})),
         "a run that does not record its CPU model is refused")
bt.check(any("mixes runs" in p for p in figures.problems_of(
    {"run": STAMP, "data": {"stats": {"json": {"date": "2026-11-26 18:12 UTC"}}}})),
    "a results file holding another run's date is refused (mixes runs)")
bt.check(root is not None and any(p.startswith("STALE") for p in figures.problems_of(
    {"run": dict(STAMP, commit=root.splitlines()[0]), "data": {}})),
    "a run older than the last commit to what it measures is refused (stale)")
bt.check(not figures.problems_of({"run": STAMP, "data": {"rows": []}}), "a current, stamped run of its own is quoted")

out, unknown = figures.generated()
bt.check(not unknown, "every figure marker is known to docs/figures.py (unknown: %s)" % (unknown or "none"))
for rel, (now, new) in sorted(out.items()):
    if now != new:
        changed = [(n, a, b) for n, (a, b) in enumerate(zip(now.splitlines(), new.splitlines()), 1) if a != b]
        n, a, b = changed[0] if changed else (0, "", "(lines added or removed)")
        bt.check(False, "%s: figures equal their sources (line %d says %r, its source gives %r)" % (rel, n, a, b))
    else:
        bt.check(True, "%s: figures equal their sources" % rel)
quoted = {f for _, _, files in figures.quoted() for f in files}
bt.check(quoted, "the pages quote figures of %d results files" % len(quoted))
refusals = figures.refusals()
for line in refusals:
    bt.check(False, "figures of a current run of their own only: " + line)
bt.check(not refusals, "every results file is one stamped run, and every one a page quotes is current (%d files)"
         % len(figures.results_files()))
loose = figures.unsourced()
for rel, n, fig in loose:
    bt.check(False, "%s:%d: %r has a source (a marker or FROM_SOURCE)" % (rel, n, fig))
bt.check(not loose, "no figure in prose without a source (%d pages)" % len(figures.pages()))
for problem in figures.broken_ties():
    bt.check(False, problem)
bt.check(len(figures.FROM_SOURCE) > 0 and not figures.broken_ties(),
         "the %d figures set in code or tests still hold in their sources" % len(figures.FROM_SOURCE))
bt.finish()

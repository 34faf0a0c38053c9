#!/usr/bin/env python3
"""Every generated block of the pages is what its source gives now
(`docs/write.py --check`), and the check fails on a block edited by hand:

  - probe tables (billing.d), the meson options (meson_options.txt),
    option and metric tables (the built programs' --print-option-table,
    --print-metric-table), figures (keys of results files, billing.d, the
    alert rules) and bench/README.md's summary, each a `<!-- gen:KIND
    ARGS -->` ... `<!-- /gen -->` block;
  - each results file is one run: {"run": its stamp (commit, CPU model,
    kernel, date, the paths it measures), "data": its figures}, no other
    run's date or machine inside, and a page quotes no figure of a run
    older than the code it measures (a commit after the run's touches a
    path it measures: refused as STALE);
  - no number with a unit stands in prose without a source, and each
    FROM_SOURCE figure still holds in its source.

A failure names the page and the block; `python3 docs/write.py --write
--build-dir BUILD` rewrites blocks, and a stale or unstamped run is measured
again (bench/README.md says how).

usage: test_write.py SOURCE_ROOT BUILD_ROOT"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

source, build = (os.path.abspath(a) for a in sys.argv[1:3])
sys.path.insert(0, os.path.join(source, "docs"))
import figures  # noqa: E402
import write  # noqa: E402

# The refusals of results files, on runs made up here: each kind must be caught.
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

# The whole check, as a user runs it.
p = subprocess.run([sys.executable, os.path.join(source, "docs", "write.py"), "--check", "--build-dir", build],
                   capture_output=True, text=True, timeout=300)
for line in p.stderr.splitlines():
    bt.check(False, line)
bt.check(p.returncode == 0 and not p.stderr, "docs/write.py --check: every block current (exit %d)" % p.returncode)

# A block of each kind edited by hand: the check names it, and --write's
# text is the page as it stands.
ctx = write.context(build)
edited = {}
for rel in write.pages():
    text = figures.read(rel)
    for m in write.MARKER.finditer(text):
        kind, body = m.group("kind"), m.group("body")
        if kind in edited or not any(c.isalnum() for c in body):
            continue
        at = m.start("body") + next(i for i, c in enumerate(body) if c.isalnum())
        edited[kind] = rel
        hand = text[:at] + ("X" if text[at] != "X" else "Y") + text[at + 1:]
        found = [f for f in write.problems(ctx, texts={rel: hand}) if f.startswith(rel + ": generated blocks differ")]
        bt.check(len(found) == 1, "%s: a hand-edited %s block is stale to --check" % (rel, kind))
        bt.check(write.regenerate(hand, ctx)[0] == text, "%s: --write gives the %s block back" % (rel, kind))
bt.check(set(edited) == set(write.KINDS), "every kind has a block in the pages (%s)" % ", ".join(sorted(edited)))
unknown = write.regenerate("<!-- gen:nonesuch -->x<!-- /gen -->", ctx)[1]
bt.check(len(unknown) == 1 and "unknown kind" in unknown[0][1], "a marker of an unknown kind is refused")
keep = figures.constant("lib/stats_settings.h", "BS_DEFAULT_SLOW_KEEP_SECONDS")
bt.check(write.regenerate("<!-- gen:fig slow-keep -->16 minutes<!-- /gen -->", ctx)[0]
         == "<!-- gen:fig slow-keep -->%d minutes<!-- /gen -->" % (keep // 60),
         "a figure tied to a named constant is written from its value (%d s)" % keep)
try:
    figures.constant("lib/stats_settings.h", "BS_NO_SUCH_CONSTANT")
    bt.check(False, "a constant its source does not define is refused")
except ValueError as e:
    bt.check("BS_NO_SUCH_CONSTANT" in str(e), "a constant its source does not define is refused (%s)" % e)
page = write.pages()[0]
broken = write.problems(ctx, texts={page: figures.read(page) + "\n<!-- gen:fig label-bytes -->31\n"})
bt.check(any(p.startswith(page + ": <!-- gen:") for p in broken), "a marker without its end is refused, not skipped")
bt.finish()

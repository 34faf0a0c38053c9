#!/usr/bin/env python3
"""Fuzz a parser for a few seconds, starting from the saved corpus and the
given seed files, and fail on any crash, leak or sanitizer report.

    test_fuzz_smoke.py FUZZER CORPUS_DIR SECONDS [--seed FILE]... [LIBFUZZER OPTIONS...]

A seed is copied in at each run from where it lives (provider/billing.d
for the .d parser), so the corpus never holds a copy that drifts.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

fuzzer, corpus, seconds, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
seeds = [rest[i + 1] for i, a in enumerate(rest) if a == "--seed"]
extra = [a for i, a in enumerate(rest) if a != "--seed" and (i == 0 or rest[i - 1] != "--seed")]
with tempfile.TemporaryDirectory() as new, tempfile.TemporaryDirectory() as artifacts:
    for seed in seeds:
        shutil.copy(seed, os.path.join(new, os.path.basename(seed)))
    p = subprocess.run([fuzzer, new, corpus, "-max_total_time=" + seconds, "-timeout=5",
                        "-rss_limit_mb=2048", "-print_final_stats=1", "-artifact_prefix=" + artifacts + "/"] + extra,
                       capture_output=True, text=True, errors="replace", timeout=int(seconds) + 60)
    stats = [l for l in p.stderr.splitlines() if l.startswith("stat::number_of_executed_units") or "Done " in l]
    print("\n".join(stats))
    if p.returncode != 0:
        print(p.stderr[-4000:])
    bt.check(p.returncode == 0, "no crash, leak or sanitizer report in %s seconds (fuzzer exit %d)"
             % (seconds, p.returncode))
    bt.check(any(l.startswith("stat::number_of_executed_units") for l in stats), "the fuzzer ran inputs")
bt.finish()

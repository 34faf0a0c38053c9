"""Fuzz the stapsdt note parser for a few seconds, starting from the saved
corpus, and fail on any crash, leak or sanitizer report.

    fuzz_smoke.py FUZZER CORPUS_DIR SECONDS [LIBFUZZER OPTIONS...]
"""
import subprocess
import sys
import tempfile

fuzzer, corpus, seconds, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with tempfile.TemporaryDirectory() as new, tempfile.TemporaryDirectory() as artifacts:
    p = subprocess.run([fuzzer, new, corpus, "-max_total_time=" + seconds, "-timeout=5",
                        "-rss_limit_mb=2048", "-print_final_stats=1", "-artifact_prefix=" + artifacts + "/"] + extra,
                       capture_output=True, text=True, errors="replace", timeout=int(seconds) + 60)
    stats = [l for l in p.stderr.splitlines() if l.startswith("stat::number_of_executed_units")
             or "Done " in l]
    print("\n".join(stats))
    if p.returncode != 0:
        print(p.stderr[-4000:])
        print("FAIL: the fuzzer found a problem (exit %d)" % p.returncode)
        sys.exit(1)
print("ok: no crash in %s seconds" % seconds)

#!/usr/bin/env python3
"""Runs `meson test` on a built tree and writes where its time went, so a
suite's time is measured, not guessed (README.md's quick-suite figure comes
from bench/results/suite-quick.json, written by this).

usage: python3 tests/time_suite.py [-C BUILD] [-j JOBS] [--out FILE]
                                   [MESON TEST ARGUMENTS...]

  -C BUILD    a configured, built meson build directory (default build)
  -j JOBS     --num-processes for meson test (default 2, as tests/run-all.sh)
  --out FILE  the JSON written (default: printed only)
  the rest goes to meson test as it is, e.g. --suite quick

Figures: the wall time of the run; the sum of the tests' durations; the
serial part (the tests meson runs alone, is_parallel false: nothing else
runs beside them, so their sum is a chain no number of cores shortens); the
floor JOBS cores allow (serial part + the rest's sum / JOBS); the longest
tests.  Exits with meson test's status, 2 on bad usage.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

LOGBASE = "suite-timing"


def run_alone(build):
    """{test name: True when meson runs it alone} from meson's introspection."""
    out = subprocess.run(["meson", "introspect", "--tests", build], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("time_suite: meson introspect --tests %s failed: %s" % (build, out.stderr.strip()[-300:]))
    return {t["name"]: not t["is_parallel"] for t in json.loads(out.stdout)}


def results(build):
    """(name, result, duration) of each test of the run just made."""
    rows = []
    with open(os.path.join(build, "meson-logs", LOGBASE + ".json")) as log:
        for line in log:
            entry = json.loads(line)
            rows.append((entry["name"].split(" / ", 1)[-1], entry["result"], entry["duration"]))
    return rows


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("-C", dest="build", default="build")
    ap.add_argument("-j", dest="jobs", type=int, default=2)
    ap.add_argument("--out")
    opts, meson_args = ap.parse_known_args()
    if opts.jobs < 1:
        ap.error("-j must be at least 1")
    alone = run_alone(opts.build)
    command = ["meson", "test", "-C", opts.build, "--no-rebuild", "--num-processes", str(opts.jobs),
               "--logbase", LOGBASE] + meson_args
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    rc = subprocess.run(command).returncode
    wall = time.monotonic() - t0
    rows = results(opts.build)
    serial = sum(d for n, _, d in rows if alone.get(n))
    spread = sum(d for n, _, d in rows if not alone.get(n))
    counts = {}
    for _, result, _ in rows:
        counts[result] = counts.get(result, 0) + 1
    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(["python3", "tests/time_suite.py", "-j", str(opts.jobs)] + meson_args),
        "machine": {"cores": os.cpu_count(), "kernel": platform.release(),
                    "load_average_at_start": round(load, 2)},
        "tests": len(rows),
        "results": counts,
        "wall_s": round(wall, 1),
        "sum_s": round(serial + spread, 1),
        "serial_s": round(serial, 1),
        "floor_s": round(serial + spread / opts.jobs, 1),
        "longest": [{"name": n, "s": round(d, 1), "alone": bool(alone.get(n))}
                    for n, _, d in sorted(rows, key=lambda r: -r[2])[:15]],
    }
    text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
    print(text, end="")
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
    return rc


if __name__ == "__main__":
    sys.exit(main())

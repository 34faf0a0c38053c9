#!/usr/bin/env python3
"""Runs `meson test` on a built tree and writes where its time went, so a
suite's time is measured, not guessed (README.md's quick-suite figure comes
from bench/results/suite-quick.json, written by this).

usage: python3 tests/time_suite.py [-C BUILD] [-j JOBS] [--out FILE]
                                   [--log TESTLOG] [MESON TEST ARGUMENTS...]

  -C BUILD      a configured, built meson build directory (default build)
  -j JOBS       --num-processes for meson test (default 2, as tests/run-all.sh)
  --out FILE    the JSON written, one run stamped with its commit, CPU
                model, kernel and date (bench/run_bench.py's stamp:
                refused while the tests have uncommitted changes);
                default: printed only
  --log TESTLOG no run: the figures of a finished one from its meson log
                (BUILD/meson-logs/testlog.json, e.g. of tests/run-all.sh),
                its wall time from the first test's start to the last's end
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
import subprocess
import sys
import time

SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(SOURCE, "bench"))
import run_bench  # noqa: E402  (the results files' stamp)

LOGBASE = "suite-timing"


def run_alone(build):
    """{test name: True when meson runs it alone} from meson's introspection."""
    out = subprocess.run(["meson", "introspect", "--tests", build], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("time_suite: meson introspect --tests %s failed: %s" % (build, out.stderr.strip()[-300:]))
    return {t["name"]: not t["is_parallel"] for t in json.loads(out.stdout)}


def results(path):
    """(name, result, duration) of each test in meson's JSON log PATH, and
    the wall time from the first test's start to the last one's end."""
    rows, spans = [], []
    with open(path) as log:
        for line in log:
            entry = json.loads(line)
            rows.append((entry["name"].split(" / ", 1)[-1], entry["result"], entry["duration"]))
            spans.append((entry["starttime"], entry["starttime"] + entry["duration"]))
    return rows, (max(e for _, e in spans) - min(s for s, _ in spans)) if spans else 0.0, \
        min(s for s, _ in spans) if spans else time.time()


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("-C", dest="build", default="build")
    ap.add_argument("-j", dest="jobs", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--log")
    opts, meson_args = ap.parse_known_args()
    if opts.jobs < 1:
        ap.error("-j must be at least 1")
    if opts.log and meson_args:
        ap.error("--log summarises a finished run: no meson test arguments")
    alone = run_alone(opts.build)
    load = os.getloadavg()[0]
    command = " ".join(["python3", "tests/time_suite.py", "-j", str(opts.jobs)]
                       + (["--log", opts.log] if opts.log else meson_args))
    if opts.out:  # refused now, not after the run
        try:
            run_bench.stamp(SOURCE, "suite", command)
        except RuntimeError as e:
            sys.exit(f"time_suite: {e}")
    if opts.log:
        rc = 0
        rows, wall, started = results(opts.log)
    else:
        meson_test = ["meson", "test", "-C", opts.build, "--no-rebuild", "--num-processes", str(opts.jobs),
                      "--logbase", LOGBASE] + meson_args
        t0, started = time.monotonic(), time.time()
        rc = subprocess.run(meson_test).returncode
        wall = time.monotonic() - t0
        rows, _, _ = results(os.path.join(opts.build, "meson-logs", LOGBASE + ".json"))
    serial = sum(d for n, _, d in rows if alone.get(n))
    spread = sum(d for n, _, d in rows if not alone.get(n))
    counts = {}
    for _, result, _ in rows:
        counts[result] = counts.get(result, 0) + 1
    machine = dict(run_bench.machine(), load_average_at_start=None if opts.log else round(load, 2))
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
    summary = {
        "tests": len(rows),
        "results": counts,
        "wall_s": round(wall, 1),
        "sum_s": round(serial + spread, 1),
        "serial_s": round(serial, 1),
        "floor_s": round(serial + spread / opts.jobs, 1),
        "longest": [{"name": n, "s": round(d, 1), "alone": bool(alone.get(n))}
                    for n, _, d in sorted(rows, key=lambda r: -r[2])[:15]],
    }
    print(json.dumps(dict(summary, date=date, command=command), indent=1, sort_keys=True))
    if opts.out:
        run = run_bench.stamp(SOURCE, "suite", command, date, machine)
        with open(opts.out, "w") as f:
            f.write(json.dumps({"run": run, "data": summary}, indent=1, sort_keys=True) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())

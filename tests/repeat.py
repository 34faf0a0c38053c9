#!/usr/bin/env python3
"""Runs chosen tests many times and prints how often each failed, so an
unstable test is measured rather than guessed at.

usage: python3 tests/repeat.py [-C BUILD] [-n RUNS] [--hogs K] [-j JOBS]
                               [--suite SUITE]... [TEST]...

  -C BUILD     a configured, built meson build directory (default build)
  -n RUNS      how many times each test runs (default 20)
  --hogs K     K busy loops run beside the tests, as another workload on
               the machine would (default 0: an idle machine)
  -j JOBS      tests run side by side, as meson test runs them (default 2)
  --suite S    every test of suite S (repeatable); TEST names one test

Prints one line per test: runs, failures, slowest run, and the first line
of each distinct failure (each failed run's output is kept in
BUILD/meson-logs/repeat-PID-TEST-ROUND.txt); exits 1 when any run failed,
2 on bad usage.
Each round is one `meson test --no-rebuild` of all the chosen tests, so
they meet each other as in CI; logs stay in BUILD/meson-logs/repeat-*.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time


def chosen_tests(build, suites, names):
    listed = subprocess.run(["meson", "test", "-C", build, "--list", "--no-rebuild"],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit("repeat: meson test --list failed in %s: %s" % (build, listed.stderr.strip()[-300:]))
    tests = []
    for line in listed.stdout.splitlines():
        # "project:suite / name"
        if " / " not in line:
            continue
        suite_part, name = line.split(" / ", 1)
        suite = suite_part.split(":", 1)[-1]
        if suite in suites or name in names:
            tests.append(name)
    unknown = set(names) - set(tests)
    if unknown:
        sys.exit("repeat: no such test in %s: %s" % (build, ", ".join(sorted(unknown))))
    return tests


def first_failure_line(entry):
    for line in (entry.get("stdout") or "").splitlines() + (entry.get("stderr") or "").splitlines():
        if line.startswith("FAIL") or "Error" in line or "Failure" in line:
            return line.strip()[:160]
    return "exit %s" % entry.get("returncode")


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("-C", dest="build", default="build")
    ap.add_argument("-n", dest="runs", type=int, default=20)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("-j", dest="jobs", type=int, default=2)
    ap.add_argument("--suite", action="append", default=[])
    ap.add_argument("tests", nargs="*")
    try:
        a = ap.parse_args()
    except SystemExit:
        sys.exit(2)
    if a.runs < 1 or a.hogs < 0 or a.jobs < 1 or not (a.suite or a.tests):
        print("repeat: give -n >= 1, --hogs >= 0, -j >= 1 and at least one --suite or TEST",
              file=sys.stderr)
        sys.exit(2)
    tests = chosen_tests(a.build, set(a.suite), set(a.tests))
    if not tests:
        sys.exit("repeat: the suites %s hold no test" % ", ".join(a.suite))

    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.hogs)]
    runs, failures, slowest = collections.Counter(), collections.defaultdict(collections.Counter), {}
    logbase = "repeat-%d" % os.getpid()
    t0 = time.monotonic()
    try:
        for r in range(1, a.runs + 1):
            subprocess.run(["meson", "test", "-C", a.build, "--no-rebuild", "--num-processes",
                            str(a.jobs), "--logbase", logbase] + tests,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            log = os.path.join(a.build, "meson-logs", logbase + ".json")
            failed_now = []
            for line in open(log):
                e = json.loads(line)
                name = e["name"].split(" / ", 1)[-1]
                runs[name] += 1
                slowest[name] = max(slowest.get(name, 0.0), e.get("duration", 0.0))
                if e.get("result") != "OK":
                    failures[name][first_failure_line(e)] += 1
                    failed_now.append(name)
                    keep = os.path.join(a.build, "meson-logs", "%s-%s-%d.txt" % (logbase, name, r))
                    with open(keep, "w") as f:
                        f.write((e.get("stdout") or "") + "\n--- stderr ---\n" + (e.get("stderr") or ""))
            bad = sum(sum(c.values()) for c in failures.values())
            print("round %d of %d: %d failures so far (%.0f s)%s" % (
                r, a.runs, bad, time.monotonic() - t0,
                "; failed now: " + ", ".join(failed_now) if failed_now else ""), flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()

    print("\n%-52s %5s %5s %8s" % ("TEST (%d hogs)" % a.hogs, "RUNS", "FAIL", "SLOWEST"))
    for name in tests:
        n = sum(failures[name].values())
        print("%-52s %5d %5d %7.1fs" % (name, runs[name], n, slowest.get(name, 0.0)))
        for why, k in failures[name].most_common():
            print("    %dx %s" % (k, why))
    total = sum(sum(c.values()) for c in failures.values())
    print("\nrepeat: %d runs of %d tests, %d failed" % (sum(runs.values()), len(tests), total))
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""billing-exporter against thousands of probe sites and notes: how long
from launch until it serves (start-up: reading the notes, attaching), and
from SIGTERM until it has exited (detaching every uprobe).

  exporter_sites_bench.py --build-dir BUILD [--exporter PATH] [--reps N]

Programs: BUILD/bench/exporter_sites_{1k,5k,20k_notes,100k_notes}
(tests/exporter/many_sites.c: 1,000 or 5,000 invoice-create sites; 1,000
sites plus 20,000 or 100,000 notes of a probe never attached).  Each run:
the program starts, the exporter attaches with --pid, the program fires
every site once and the exporter's invoice count must equal the sites
(else the run is reported as wrong), then SIGTERM.  --exporter measures
another build (e.g. an older commit's, for a before/after table).  Prints
a Markdown table of medians.  `meson compile -C BUILD bench-exporter-sites`
runs it on this build.  Needs root (BPF); exit 77 with the reason
otherwise.  A run whose exporter has not exited 600 s after SIGTERM is
killed and reported as "> 600 s".
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))
import billingtest as bt  # noqa: E402

PROGRAMS = [("1k", 1000, 0), ("5k", 5000, 0), ("20k_notes", 1000, 20000), ("100k_notes", 1000, 100000)]
STOP_LIMIT = 600


def one_run(exporter, program, sites):
    """(start-up s, shutdown s or None when over the limit, counted right)."""
    prog = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ex = None
    try:
        prog.stdout.readline()
        t0 = time.monotonic()
        ex = subprocess.Popen([exporter, "--pid", str(prog.pid), "--metrics", "business", "--listen",
                               "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        url = None
        for line in ex.stderr:
            m = re.search(r"serving (http://[0-9.:]+)/metrics", line)
            if m:
                url = m.group(1)
                break
        started = time.monotonic() - t0
        if not url:
            raise RuntimeError("the exporter did not start: " + line.strip())
        prog.stdin.write("go\n")
        prog.stdin.flush()
        prog.stdout.readline()
        with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
            body = r.read().decode()
        counted = sum(float(l.rsplit(" ", 1)[1]) for l in body.splitlines()
                      if l.startswith("billing_invoices_total{"))
        t1 = time.monotonic()
        ex.send_signal(signal.SIGTERM)
        try:
            ex.wait(timeout=STOP_LIMIT)
            stopped = time.monotonic() - t1
        except subprocess.TimeoutExpired:
            ex.kill()
            ex.wait()
            stopped = None
        return started, stopped, counted == sites
    finally:
        if ex and ex.poll() is None:
            ex.kill()
            ex.wait()
        prog.stdin.close()
        prog.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--exporter", help="billing-exporter to measure (default: BUILD's)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", help="comma list of program names (1k,5k,20k_notes,100k_notes)")
    args = ap.parse_args()
    why = bt.why_no_tracing(tracer=None)
    if why:
        print("skipped: " + why)
        sys.exit(77)
    exporter = args.exporter or os.path.join(args.build_dir, "tools", "billing-exporter", "billing-exporter")
    print("| program | sites | notes | start-up (s) | SIGTERM to exit (s) | counted exactly |")
    print("|---|---:|---:|---:|---:|---|")
    for name, sites, notes in PROGRAMS:
        if args.only and name not in args.only.split(","):
            continue
        program = os.path.join(args.build_dir, "bench", "exporter_sites_" + name)
        runs = [one_run(exporter, program, sites) for _ in range(args.reps)]
        stops = [r[1] for r in runs]
        stop = "> %d" % STOP_LIMIT if None in stops else "%.2f" % statistics.median(stops)
        print("| %s | %d | %d | %.2f | %s | %s |" % (name, sites, sites + notes,
                                                     statistics.median(r[0] for r in runs), stop,
                                                     "yes" if all(r[2] for r in runs) else "NO"), flush=True)


if __name__ == "__main__":
    main()

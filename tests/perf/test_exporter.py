#!/usr/bin/env python3
"""billing-exporter's instructions per scrape at 64 and 1,000 live
segments, and per added segment (the slope between them), held against
tests/perf/budgets.json (test "exporter"): scraped as text (Prometheus's
default: no native buckets, the native cells left behind) and as protobuf
(native histograms on: the native cells read).

  test_exporter.py BUDGETS BILLING_EXPORTER LIVE_WRITERS

For each count, LIVE_WRITERS (tests/perf/live_writers.c) keeps that many
processes counting into their segments, every label set of the reading
bench's fixture; billing-exporter --stats-dir --metrics all runs under
callgrind, counting bx_render() only (a scrape: the segments read and
summed, the exposition written) and dumping its count after each.  The
first scrape (protobuf) reads what the start did not; then every writer
fires every label set again, so each row has changed, before each scrape
that is a figure: a protobuf one, then a text one.  Each one's bytes read
(/proc/PID/io rchar: what the kernel copied for it, the CPU time
callgrind does not see) are held beside its instructions.  The writers' parent has a segment too, empty,
as a pre-fork service's supervisor has.
"""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import perftest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

COUNTS = (64, 1000)
SCRAPE_FUNCTION = "bx_render"  # tools/billing-exporter/http.c: one scrape, from the segments to the text
PROTOBUF = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
# Each scrape's Accept (None: text); the second and third are the figures.
SCRAPES = (PROTOBUF, PROTOBUF, None)
FORMATS = {PROTOBUF: "protobuf, native histograms", None: "text"}


class Writers:
    """live_writers N: N processes with changing segments."""

    def __init__(self, exe, n, env):
        self.n = n
        self.proc = subprocess.Popen([exe, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        self.ready()

    def ready(self):
        line = self.proc.stdout.readline()
        if line.strip() != f"ready {self.n}":
            raise RuntimeError(f"live_writers {self.n}: said {line!r}, exit {self.proc.poll()}")

    def round(self):
        """Every writer fires every label set once more."""
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        self.ready()

    def stop(self):
        self.proc.stdin.close()
        bt.stop_process(self.proc)


def bytes_read(pid):
    """What the process has read through read(), pread() and the like
    (/proc/PID/io rchar): the pages the kernel copied for it."""
    with open(f"/proc/{pid}/io") as f:
        return int(re.search(r"^rchar: (\d+)", f.read(), re.M).group(1))


def scrape_counts(exporter, directory, writers, workdir):
    """Instructions of each scrape (SCRAPES), a round before each after the
    first; bytes read in each; the series of the text one."""
    out = os.path.join(workdir, "callgrind.out")
    log = open(os.path.join(workdir, "exporter.log"), "w+")
    # The scrape's own time limit lifted: under callgrind a scrape of today's code takes a minute.
    cmd = perftest.callgrind_cmd(out, toggle=SCRAPE_FUNCTION, dump_after=SCRAPE_FUNCTION) + [
        exporter, "--stats-dir", directory, "--metrics", "all", "--listen", "127.0.0.1:0", "--web-request-timeout", "3600"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=perftest.clean_env())
    try:
        url = None
        deadline = time.monotonic() + 300
        while not url:
            log.seek(0)
            m = re.search(r"serving (http://127\.0\.0\.1:\d+)/metrics", log.read())
            if m:
                url = m.group(1) + "/metrics"
            elif proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError("billing-exporter under callgrind did not start: " + log.read()[-600:])
            else:
                time.sleep(0.2)
        bodies, read = [], []
        for i, accept in enumerate(SCRAPES):
            if i:
                writers.round()
            before = bytes_read(proc.pid)
            req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
            with urllib.request.urlopen(req, timeout=1800) as r:
                bodies.append(r.read())
            read.append(bytes_read(proc.pid) - before)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    counts = []
    for i in range(1, len(SCRAPES) + 1):
        path = f"{out}.{i}"
        if not os.path.exists(path):
            raise RuntimeError(f"callgrind wrote no count after scrape {i} ({path}): {SCRAPE_FUNCTION} renamed?")
        counts.append(perftest.Profile(path).total)
    series = sum(1 for line in bodies[-1].decode().splitlines() if line and not line.startswith("#"))
    return counts, read, series


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    budgets_path, exporter, writers_exe = sys.argv[1:]
    perftest.require_valgrind()
    budgets = perftest.Budgets(budgets_path, "exporter")
    per = {}
    for n in COUNTS:
        with perftest.Workdir(f"perf-exporter-{n}-") as workdir:
            directory = os.path.join(workdir, "segments")
            os.mkdir(directory, 0o700)
            writers = Writers(writers_exe, n, perftest.clean_env(BILLING_STATS_DIR=directory))
            try:
                segments = len([f for f in os.listdir(directory) if f.endswith(".stats")])
                bt.check(segments == n + 1, f"{n} writers and their parent made {n} + 1 segments ({segments})")
                counts, read, series = scrape_counts(exporter, directory, writers, workdir)
            finally:
                writers.stop()
        bt.check(series > 1000, f"{n} segments: the text scrape served the fixture's {series} series")
        for i in (1, 2):
            fmt = FORMATS[SCRAPES[i]]
            per[n, fmt] = {"instructions": counts[i], "bytes read": read[i]}
            budgets.hold(f"exporter, instructions per scrape, {n:,} live segments, {fmt}", counts[i],
                         f"a scrape after every row changed; the first scrape: {counts[0]:,}; {series:,} series")
            budgets.hold(f"exporter, bytes read per scrape, {n:,} live segments, {fmt}", read[i], "/proc/PID/io rchar")
    low, high = COUNTS
    for fmt in FORMATS.values():
        for what in ("instructions", "bytes read"):
            a, b = per[low, fmt][what], per[high, fmt][what]
            budgets.hold(f"exporter, {what} per scrape per added segment (the slope from {low} to {high:,}), {fmt}",
                         (b - a) / (high - low), f"({b:,} - {a:,}) / {high - low}")
    budgets.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What reading stats segments costs billing-exporter, against segment count.

  reader_bench.py --build-dir BUILD --source-dir SOURCE [--quick] [--reps N]
                  [--baseline OTHER_EXPORTER] [--publish]

N segments with full label sets (tests/stats/stats_workload labels 64:
1,345 series, the issue's fixture) in one --stats-dir, served by
billing-exporter --metrics all:

1. /metrics time over HTTP at 1, 64 and 1,000 segments: the median of the
   scrapes, each exporter scraped in turn (interleaved: a busy moment of
   the shared machine lands on all), and the exporter's CPU time per
   scrape (every thread's time on a CPU, /proc/PID/task/*/schedstat: what
   other processes on the cores add to the wall time is not in it).  With
   --baseline, another build's exporter is scraped beside this one.
2. Instructions per scrape (callgrind, bx_snapshot_take: the refresh of
   every segment and the exposition), at 1 and 64 segments.
3. The exporter's resident memory after the scrapes above its own with an
   empty --stats-dir, against the data it serves: the segments' bytes in
   memory (their allocated blocks).

Targets (issue 31): 64 segments <= 5 ms, 1,000 <= 50 ms, RSS <= 2x the data.
Prints a Markdown table, then one JSON object (run_bench.py's run_exporter
reads both).  --publish also puts the result in SOURCE/bench/results/
latest.json as its "reading" part, and rewrites latest.md, bench/README.md's
figures and the docs' figures from it (docs/figures.py).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))
import billingtest as bt  # noqa: E402
import exporter_bench  # noqa: E402  (its Exporter: a served billing-exporter)

TARGETS = {"ms_64": 5.0, "ms_1000": 50.0, "rss_ratio": 2.0}
FILL = ["labels", "64"]


def make_segments(build, workdir, counts):
    """{n: directory of n segments}: one filled segment, copied sparse."""
    src_dir = os.path.join(workdir, "fill")
    r = subprocess.run([os.path.join(build, "tests", "stats", "stats_workload")] + FILL,
                       capture_output=True, text=True, env=dict(os.environ, BILLING_STATS_DIR=src_dir))
    if r.returncode != 0:
        raise RuntimeError("stats_workload: " + r.stderr)
    seg = r.stdout.split()[-1]
    dirs = {}
    for n in counts:
        d = os.path.join(workdir, f"n{n}")
        os.mkdir(d, 0o700)
        for i in range(n):
            subprocess.run(["cp", "--sparse=always", seg, os.path.join(d, f"{100000 + i}.stats")], check=True)
        dirs[n] = d
    return dirs, os.stat(seg).st_blocks * 512


def vm_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(rf"^{field}:\s+(\d+)", f.read(), re.M).group(1))


def cpu_ns(pid):
    """The process's time on a CPU, every thread (schedstat: ns, waiting for a CPU not counted)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def timed_scrapes(exporters, scrapes):
    """{label: ([ms per scrape], [CPU ms per scrape])}, the exporters scraped in turn."""
    times = {label: ([], []) for label in exporters}
    for _ in range(scrapes):
        for label, ex in exporters.items():
            c0, t0 = cpu_ns(ex.proc.pid), time.perf_counter()
            body = ex.scrape()
            times[label][0].append((time.perf_counter() - t0) * 1000)
            times[label][1].append((cpu_ns(ex.proc.pid) - c0) / 1e6)
            ex.body_bytes = len(body)
    return times


def scrape_time(exes, d, scrapes):
    exporters = {}
    try:
        for label, exe in exes.items():
            exporters[label] = exporter_bench.Exporter(exe, "--stats-dir", d, "--metrics", "all")
        times = timed_scrapes(exporters, scrapes)
        return {label: {"ms": {"median": statistics.median(t), "min": min(t), "max": max(t)},
                        "cpu_ms": {"median": statistics.median(c), "min": min(c), "max": max(c)},
                        "rss_kb": vm_kb(exporters[label].proc.pid, "VmRSS"),
                        "hwm_kb": vm_kb(exporters[label].proc.pid, "VmHWM"),
                        "body_bytes": exporters[label].body_bytes} for label, (t, c) in times.items()}
    finally:
        for ex in exporters.values():
            ex.stop()


def instructions(exe, d, scrapes):
    """Instructions in bx_snapshot_take per scrape, under callgrind."""
    work = tempfile.mkdtemp(prefix="reader-callgrind-")
    out = os.path.join(work, "callgrind.out")
    vg = ["valgrind", "--tool=callgrind", "--toggle-collect=bx_snapshot_take", f"--callgrind-out-file={out}", exe]
    ex = exporter_bench.Exporter(vg[0], *vg[1:], "--stats-dir", d, "--metrics", "all")
    try:
        for _ in range(scrapes):
            ex.scrape()
    finally:
        ex.stop()
        ex.log.seek(0)
        text = ex.log.read()
        shutil.rmtree(work, ignore_errors=True)
    m = re.search(r"Collected\s*:\s*(\d+)", text)
    if not m:
        raise RuntimeError("callgrind: " + text[-400:])
    return int(m.group(1)) / scrapes


def verdict(value, target):
    return "met" if value <= target else "MISSED"


def measure(build, exes, counts, scrapes, cg_counts):
    workdir = tempfile.mkdtemp(prefix="billing-readerbench-", dir="/dev/shm")
    try:
        dirs, seg_bytes = make_segments(build, workdir, counts)
        rows = []
        for n in counts:
            per = scrape_time(exes, dirs[n], scrapes)
            row = {"segments": n, "data_bytes": n * seg_bytes, "exporters": per}
            if n in cg_counts:
                row["instructions"] = {label: instructions(exe, dirs[n], 3) for label, exe in exes.items()}
            rows.append(row)
            print(f"  {n} segments: {json.dumps(row)}", file=sys.stderr, flush=True)
        return {"fill": {"workload": " ".join(FILL), "segment_bytes_in_memory": seg_bytes},
                "scrapes": scrapes, "rows": rows}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def markdown(res):
    labels = list(res["rows"][0]["exporters"])
    m = res["machine"]
    o = [f"Measured {res['date']} on Linux {m['kernel']}, {m['cpu']}, {m['cores']} cores (load average "
         f"{m['load_average_at_start']:.2f} at start; other work shares the cores: the CPU column is the "
         "exporter's own).", "",
         f"Segments with full label sets (tests/stats/stats_workload {res['fill']['workload']}: "
         f"{res['fill']['segment_bytes_in_memory']:,} bytes in memory each), one "
         f"--stats-dir, `--metrics all`; {res['scrapes']} scrapes over HTTP each, "
         + ("the exporters scraped in turn." if len(labels) > 1 else "median (min..max)."), "",
         "| segments | exporter | /metrics ms | CPU ms per scrape | instructions per scrape | RSS MB | data MB | "
         "RSS above empty / data |",
         "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        for label in labels:
            e = r["exporters"][label]
            ms, ins, ratio = e["ms"], r.get("instructions", {}).get(label), rss_ratio(res, r, label)
            cpu = e["cpu_ms"]
            o.append(f"| {r['segments']:,} | {label} | {ms['median']:.2f} ({ms['min']:.2f}..{ms['max']:.2f}) | "
                     f"{cpu['median']:.2f} ({cpu['min']:.2f}..{cpu['max']:.2f}) | "
                     f"{f'{ins / 1e6:.2f} M' if ins else '-'} | {e['rss_kb'] / 1024:.1f} | "
                     f"{r['data_bytes'] / 2 ** 20:.2f} | {'-' if ratio is None else f'{ratio:.2f}'} |")
    return "\n".join(o + [""] + [f"- {w}: {res_text} ({t})" for w, res_text, t in summary(res)])


def rss_ratio(res, row, label):
    """The exporter's resident memory above its own with no segment, per byte of segment data."""
    if not row["data_bytes"]:
        return None
    empty = next(r for r in res["rows"] if r["segments"] == 0)["exporters"][label]["rss_kb"]
    return (row["exporters"][label]["rss_kb"] - empty) * 1024 / row["data_bytes"]


def summary(res):
    """(what, result, target) rows for bench/README.md, this build's exporter."""
    by = {r["segments"]: r["exporters"]["this build"] for r in res["rows"]}
    rows = []
    for n, key in ((64, "ms_64"), (1000, "ms_1000")):
        if n in by:
            ms, cpu = by[n]["ms"]["median"], by[n]["cpu_ms"]["median"]
            others = {label: e for label, e in next(r for r in res["rows"] if r["segments"] == n)["exporters"].items()
                      if label != "this build"}
            beside = "".join(f"; {label}: {e['ms']['median']:.2f} ms ({e['ms']['median'] / ms:.1f}x)"
                             for label, e in others.items())
            rows.append((f"/metrics from {n:,} stats segments, full label sets",
                         f"{ms:.2f} ms median over HTTP, {cpu:.2f} ms of the exporter's CPU{beside}",
                         f"<= {TARGETS[key]:g} ms: {verdict(ms, TARGETS[key])} (CPU: {verdict(cpu, TARGETS[key])})"))
    worst = max((r for r in res["rows"] if r["segments"] >= 64), key=lambda r: rss_ratio(res, r, "this build"))
    ratio = rss_ratio(res, worst, "this build")
    rows.append(("Exporter RSS above its own, against the segment data it serves",
                 f"{ratio:.2f}x at {worst['segments']:,} segments",
                 f"<= {TARGETS['rss_ratio']:g}x: {verdict(ratio, TARGETS['rss_ratio'])}"))
    return rows


def publish(source, result):
    """result as latest.json's "reading" part, and what is generated from it."""
    import run_bench
    run_bench.publish_part(source, lambda res: res.update(reading=result))


def machine_cpu():
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
    return m.group(1).strip() if m else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer segments and scrapes: a smoke run")
    ap.add_argument("--reps", type=int, default=20, help="scrapes per exporter and count (default 20)")
    ap.add_argument("--baseline", help="another build's billing-exporter, scraped beside this one")
    ap.add_argument("--baseline-label", default="baseline", help="what the baseline is, in the table")
    ap.add_argument("--publish", action="store_true", help="write the result into SOURCE/bench/results")
    a = ap.parse_args()
    build, source = os.path.abspath(a.build_dir), os.path.abspath(a.source_dir)
    exe = os.path.join(build, "tools", "billing-exporter", "billing-exporter")
    if not os.path.exists(os.path.join(build, "tests", "stats", "stats_workload")) or not os.path.exists(exe):
        print("tests/stats/stats_workload or billing-exporter not built (-Dexporter, a Linux build with the stats writer)")
        return bt.SKIP
    if a.publish and a.quick:
        print("reader_bench.py: --publish needs a full run (no --quick)", file=sys.stderr)
        return 2
    exes = {"this build": exe}
    if a.baseline:
        exes[a.baseline_label] = os.path.abspath(a.baseline)
    counts = (0, 1, 64) if a.quick else (0, 1, 64, 1000)
    started = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": {"kernel": os.uname().release, "cpu": machine_cpu(), "cores": os.cpu_count(),
                           "load_average_at_start": os.getloadavg()[0]}}
    res = dict(started, **measure(build, exes, counts, 3 if a.quick else a.reps, (1,) if a.quick else (1, 64)))
    res["summary"] = summary(res)
    res["targets"] = TARGETS
    print(markdown(res))
    print(json.dumps(res, indent=1))
    if a.publish:
        publish(source, {"markdown": markdown(res), "json": res})
    return 0


if __name__ == "__main__":
    sys.exit(main())

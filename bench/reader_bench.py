#!/usr/bin/env python3
"""What reading stats segments costs billing-exporter, against segment count.

  reader_bench.py --build-dir BUILD --source-dir SOURCE [--quick] [--reps N]
                  [--live N] [--baseline OTHER_EXPORTER [--baseline-label L]] [--publish]
  reader_bench.py --build-dir BUILD --source-dir SOURCE --instructions

One --stats-dir served by billing-exporter --metrics all, scraped over
HTTP; every exporter (this build's, and --baseline's beside it) scraped in
turn, so a busy moment of the shared machine lands on all:

1. Copies: N copies of one segment with full label sets (tests/stats/
   stats_workload labels 64: 1,345 series; their writer has exited) at 0,
   1, 64 and 1,000 segments: the exporter's CPU time per scrape (every
   thread's, /proc/PID/task/*/schedstat: what other processes add to the
   wall time is not in it), the wall time, and its resident memory (VmRSS; and RssAnon: its
   own, without the running writers' pages it maps).
2. Live: N running processes (64; --live sets it), each with full label
   sets and values spread over their buckets (stats_workload full 20
   hold, then idle): CPU per scrape and memory.  Then the same processes
   firing every label set once between two scrapes (stats_workload full
   20 step): what a scrape costs when every row of every segment changed,
   scraped as Prometheus does by default (text: no native buckets, the
   native cells left behind) and with native histograms on (protobuf:
   the native cells read).
3. Instructions per scrape (callgrind, bx_snapshot_take, the scrapes
   after the first: their difference) at 64 and 1,000 copies, and the
   slope per segment between them; --instructions measures this alone (the
   figure `perf` budgets hold).
4. 30,000 empty names and 1,000 of junk beside one real segment: seconds
   from the exporter's start to the right figure on /metrics.

Targets (issue 44): 64 live processes <= 5 ms CPU per scrape; 1,000
segments <= 100 ms CPU and <= 300 MB resident; 30,000 junk names: the
right figure within 3 s.  Prints a Markdown table, then one JSON object
(run_bench.py's run_exporter reads both).  --publish also writes the
result into SOURCE/bench/results/reading.json (one run, stamped) and
rewrites what is generated from it (docs/write.py).
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

PROTOBUF = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
TARGETS = {"live_cpu_ms": 5.0, "copies_1000_cpu_ms": 100.0, "copies_1000_rss_mb": 300.0, "junk_s": 3.0}
COPIES = ["labels", "64"]
LIVE = ["full", "20"]
INSTRUCTION_COUNTS = (64, 1000)


def workload(build):
    return os.path.join(build, "bench", "stats_workload")


def make_copies(build, workdir, counts):
    """{n: directory of n segments}: one filled segment, copied sparse."""
    src_dir = os.path.join(workdir, "fill")
    r = subprocess.run([workload(build)] + COPIES, capture_output=True, text=True,
                       env=dict(os.environ, BILLING_STATS_DIR=src_dir))
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


class Live:
    """n processes of stats_workload full ... MODE, in one directory, each
    alive until its stdin closes; step(): each fires every label set once
    (MODE step)."""

    def __init__(self, build, d, n, mode):
        self.procs = []
        env = dict(os.environ, BILLING_STATS_DIR=d)
        for _ in range(n):
            p = subprocess.Popen([workload(build)] + LIVE + [mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=env, text=True)
            self.procs.append(p)
        for p in self.procs:  # each prints its segment once filled
            if not p.stdout.readline().startswith("segment"):
                self.stop()
                raise RuntimeError("stats_workload full did not start")
        self.bytes = sum(os.stat(os.path.join(d, f)).st_blocks * 512 for f in os.listdir(d))

    def step(self):
        for p in self.procs:
            p.stdin.write("step\n")
            p.stdin.flush()
        for p in self.procs:
            if p.stdout.readline().strip() != "fired":
                raise RuntimeError("stats_workload full step did not fire")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.stdin.close()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


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


def stats_of(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def scrape_time(exes, d, scrapes, before=None, accept=None):
    """Per exporter: ms and CPU ms per scrape (the first scrape apart: it
    reads what the start did not), resident memory after, series served
    (text; None for protobuf); before() runs before each round of scrapes,
    accept is each scrape's Accept header (None: text)."""
    exporters = {}
    try:
        for label, exe in exes.items():
            exporters[label] = exporter_bench.Exporter(exe, "--stats-dir", d, "--metrics", "all")
        times = {label: ([], []) for label in exporters}
        first, series = {}, {}
        for i in range(scrapes + 1):
            if before:
                before()
            for label, ex in exporters.items():
                c0, t0 = cpu_ns(ex.proc.pid), time.perf_counter()
                body = ex.scrape(accept)
                ms, cpu = (time.perf_counter() - t0) * 1000, (cpu_ns(ex.proc.pid) - c0) / 1e6
                if i == 0:
                    first[label] = cpu
                    series[label] = None if accept else sum(1 for line in body.decode().splitlines()
                                                            if line and line[0] != "#")
                else:
                    times[label][0].append(ms)
                    times[label][1].append(cpu)
        return {label: {"ms": stats_of(t), "cpu_ms": stats_of(c), "first_cpu_ms": first[label],
                        "series": series[label], "rss_kb": vm_kb(exporters[label].proc.pid, "VmRSS"),
                        "anon_kb": vm_kb(exporters[label].proc.pid, "RssAnon"),
                        "hwm_kb": vm_kb(exporters[label].proc.pid, "VmHWM")}
                for label, (t, c) in times.items()}
    finally:
        for ex in exporters.values():
            ex.stop()


def instructions(exe, d, scrapes=(2, 6)):
    """Instructions in bx_snapshot_take per scrape, under callgrind: the
    difference of runs of a few and of more scrapes, so the first (which
    reads what the start did not) and the start cancel out."""
    counts = []
    for n in scrapes:
        work = tempfile.mkdtemp(prefix="reader-callgrind-")
        out = os.path.join(work, "callgrind.out")
        ex = exporter_bench.Exporter("valgrind", "--tool=callgrind", "--toggle-collect=bx_snapshot_take",
                                     f"--callgrind-out-file={out}", exe, "--stats-dir", d, "--metrics", "all")
        try:
            for _ in range(n):
                ex.scrape()
        finally:
            ex.stop()
            ex.log.seek(0)
            text = ex.log.read()
            shutil.rmtree(work, ignore_errors=True)
        m = re.search(r"Collected\s*:\s*(\d+)", text)
        if not m:
            raise RuntimeError("callgrind: " + text[-400:])
        counts.append(int(m.group(1)))
    return (counts[1] - counts[0]) / (scrapes[1] - scrapes[0])


def junk_names(build, exe, workdir):
    """Seconds from the exporter's start to the right figure, with 30,000
    empty names and 1,000 of junk beside one real segment."""
    d = os.path.join(workdir, "junk")
    r = subprocess.run([workload(build)] + COPIES, capture_output=True, text=True,
                       env=dict(os.environ, BILLING_STATS_DIR=d))
    if r.returncode != 0:
        raise RuntimeError("stats_workload: " + r.stderr)
    alone = exporter_bench.Exporter(exe, "--stats-dir", d)
    try:
        want = requests_total(alone.scrape())
    finally:
        alone.stop()
    for i in range(1000):
        with open(os.path.join(d, f"{1000000 + i}.stats"), "wb") as f:
            f.write(b"not a segment\n" * 300)
    for i in range(30000):
        open(os.path.join(d, f"{2000000 + i}.stats"), "wb").close()
    t0 = time.monotonic()
    ex = exporter_bench.Exporter(exe, "--stats-dir", d)
    try:
        while requests_total(ex.scrape()) != want:
            if time.monotonic() - t0 > 120:
                raise RuntimeError("no right figure within 120 s")
        return {"names": 31001, "seconds": time.monotonic() - t0, "requests": want}
    finally:
        ex.stop()


def requests_total(body):
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
               if line.startswith("billing_requests_total{"))


def measure(build, exes, a):
    workdir = tempfile.mkdtemp(prefix="billing-readerbench-", dir="/dev/shm")
    counts = (0, 1, 64) if a.quick else (0, 1, 64, 1000)
    try:
        dirs, seg_bytes = make_copies(build, workdir, counts)
        res = {"copies": {"workload": " ".join(COPIES), "segment_bytes_in_memory": seg_bytes, "rows": []}}
        for n in counts:
            row = {"segments": n, "data_bytes": n * seg_bytes, "exporters": scrape_time(exes, dirs[n], a.reps)}
            res["copies"]["rows"].append(row)
            print(f"  {n} copies: {json.dumps(row)}", file=sys.stderr, flush=True)
        res["live"] = []
        for mode in ("hold", "step"):
            d = os.path.join(workdir, f"live-{mode}")
            live = Live(build, d, a.live, mode)
            try:
                for fmt in ("text", "protobuf") if mode == "step" else ("text",):
                    row = {"processes": a.live, "mode": mode, "format": fmt, "workload": " ".join(LIVE + [mode]),
                           "data_bytes": live.bytes,
                           "exporters": scrape_time(exes, d, a.reps, live.step if mode == "step" else None,
                                                    PROTOBUF if fmt == "protobuf" else None)}
                    res["live"].append(row)
                    print(f"  {a.live} live ({mode}, {fmt}): {json.dumps(row)}", file=sys.stderr, flush=True)
            finally:
                live.stop()
            shutil.rmtree(d, ignore_errors=True)
        if not a.quick:
            res["instructions"] = instruction_rows(exes, dirs)
            res["junk"] = junk_names(build, exes["this build"], workdir)
        return res
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def instruction_rows(exes, dirs):
    out = {}
    for label, exe in exes.items():
        per = {n: instructions(exe, dirs[n]) for n in INSTRUCTION_COUNTS if n in dirs}
        lo, hi = INSTRUCTION_COUNTS
        out[label] = {"per_scrape": {str(n): v for n, v in per.items()},
                      "per_segment": (per[hi] - per[lo]) / (hi - lo) if lo in per and hi in per else None}
        print(f"  instructions, {label}: {out[label]}", file=sys.stderr, flush=True)
    return out


def verdict(value, target):
    return "met" if value <= target else "MISSED"


def row_line(what, e):
    ms, cpu = e["ms"], e["cpu_ms"]
    series = f"{e['series']:,}" if e["series"] is not None else "as text"
    return (f"| {what} | {series} | {ms['median']:.2f} ({ms['min']:.2f}..{ms['max']:.2f}) | "
            f"{cpu['median']:.2f} ({cpu['min']:.2f}..{cpu['max']:.2f}) | {e['first_cpu_ms']:.1f} | "
            f"{e['rss_kb'] / 1024:.1f} | {e['anon_kb'] / 1024:.1f} |")


def markdown(res):
    m = res["machine"]
    labels = list(res["copies"]["rows"][0]["exporters"])
    o = [f"Measured {res['date']} on Linux {m['kernel']}, {m['cpu']}, {m['cores']} cores (load average "
         f"{m['load_average_at_start']:.2f} at start; other work shares the cores: the CPU columns are the "
         "exporter's own).  `python3 bench/reader_bench.py --build-dir build --source-dir .`", "",
         f"One --stats-dir, `--metrics all`; {res['scrapes']} scrapes over HTTP after the first, median (min..max)"
         + ("; the exporters scraped in turn." if len(labels) > 1 else "."), "",
         "RSS counts the pages of running writers' segments the exporter has read (mapped, shared with "
         "and charged to their writers); RssAnon is the exporter's own memory.", "",
         "| segments | series | /metrics ms | CPU ms per scrape | CPU ms, first scrape | RSS MB | RssAnon MB |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    c = res["copies"]
    for r in c["rows"]:
        for label in labels:
            who = f" ({label})" if len(labels) > 1 else ""
            o.append(row_line(f"{r['segments']:,} copies of one ({c['workload']}){who}", r["exporters"][label]))
    for r in res["live"]:
        for label in labels:
            who = f" ({label})" if len(labels) > 1 else ""
            what = "idle" if r["mode"] == "hold" else "every label set fired once between scrapes"
            what += ", protobuf (native histograms)" if r.get("format") == "protobuf" else ""
            o.append(row_line(f"{r['processes']} live processes ({r['workload']}), {what}{who}", r["exporters"][label]))
    ins = res.get("instructions")
    if ins:
        o += [""]
        for label, v in ins.items():
            per = ", ".join(f"{float(k):,.0f} segments {x / 1e6:.2f} M" for k, x in v["per_scrape"].items())
            o.append(f"Instructions per scrape ({label}; callgrind, bx_snapshot_take, after the first scrape): {per}; "
                     f"slope {v['per_segment'] / 1e3:.1f} k instructions per segment.")
    j = res.get("junk")
    if j:
        o += ["", f"{j['names']:,} names in a --stats-dir (30,000 empty, 1,000 of junk, one segment): the right "
              f"figure {j['seconds']:.2f} s after the exporter's start."]
    return "\n".join(o + [""] + [f"- {w}: {text} ({t})" for w, text, t in summary(res)])


def summary(res):
    """(what, result, target) rows for bench/README.md, this build's exporter."""
    rows = []
    # both modes held to the target: a live service's label sets change
    # between scrapes, so the idle figure alone would say less than it costs
    # scraped as text (Prometheus's default) and as protobuf (native histograms on)
    for mode, fmt, how in (("hold", "text", "idle"), ("step", "text", "every label set fired between scrapes"),
                           ("step", "protobuf", "every label set fired between scrapes, protobuf (native histograms)")):
        live = next((r for r in res["live"] if r["mode"] == mode and r.get("format", "text") == fmt), None)
        if not live:
            continue
        e = live["exporters"]["this build"]
        series = next(r for r in res["live"] if r["mode"] == mode)["exporters"]["this build"]["series"]
        rows.append((f"/metrics from {live['processes']} live processes, full label sets ({series:,} series), "
                     f"{how}", f"{e['cpu_ms']['median']:.2f} ms of the exporter's CPU per scrape",
                     f"<= {TARGETS['live_cpu_ms']:g} ms: {verdict(e['cpu_ms']['median'], TARGETS['live_cpu_ms'])}"))
        rows.append((f"resident memory beside {live['processes']} live processes, {how}",
                     f"{e['rss_kb'] / 1024:.0f} MB, {e['anon_kb'] / 1024:.0f} MB of it the exporter's own (RssAnon)",
                     "the rest: their segments' pages, mapped"))
    by = {r["segments"]: r["exporters"]["this build"] for r in res["copies"]["rows"]}
    if 1000 in by:
        e = by[1000]
        rows.append(("/metrics from 1,000 stats segments, full label sets",
                     f"{e['cpu_ms']['median']:.2f} ms of the exporter's CPU per scrape, {e['rss_kb'] / 1024:.0f} MB "
                     "resident",
                     f"<= {TARGETS['copies_1000_cpu_ms']:g} ms and <= {TARGETS['copies_1000_rss_mb']:g} MB: "
                     + verdict(max(e['cpu_ms']['median'] / TARGETS['copies_1000_cpu_ms'],
                                   e['rss_kb'] / 1024 / TARGETS['copies_1000_rss_mb']), 1.0)))
    if 64 in by and 1000 in by:
        slope = (by[1000]["cpu_ms"]["median"] - by[64]["cpu_ms"]["median"]) / 936 * 1000
        rows.append(("/metrics CPU per segment, 64 to 1,000 segments", f"{slope:.1f} us per segment", "the slope"))
    j = res.get("junk")
    if j:
        rows.append(("30,000 junk names in a --stats-dir: the right figure", f"{j['seconds']:.2f} s after the start",
                     f"<= {TARGETS['junk_s']:g} s: {verdict(j['seconds'], TARGETS['junk_s'])}"))
    return rows


def publish(source, result):
    """result as the published "reading" part (its own file), and what is generated from it."""
    import run_bench
    run_bench.publish_part(source, lambda res: res.update(reading=result))


def machine_cpu():
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
    return m.group(1).strip() if m else "unknown"


def instructions_only(build, exe):
    """--instructions: instructions per scrape at 64 and 1,000 copies."""
    workdir = tempfile.mkdtemp(prefix="billing-readerbench-", dir="/dev/shm")
    try:
        dirs, _ = make_copies(build, workdir, INSTRUCTION_COUNTS)
        res = instruction_rows({"this build": exe}, dirs)["this build"]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for n, v in res["per_scrape"].items():
        print(f"instructions per scrape, {n} segments: {v:.0f}")
    print(f"instructions per segment: {res['per_segment']:.0f}")
    print(json.dumps(res, indent=1))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer segments and scrapes: a smoke run")
    ap.add_argument("--reps", type=int, default=20, help="scrapes per exporter and count after the first (default 20)")
    ap.add_argument("--live", type=int, default=64, help="live processes (default 64)")
    ap.add_argument("--baseline", help="another build's billing-exporter, scraped beside this one")
    ap.add_argument("--baseline-label", default="baseline", help="what the baseline is, in the table")
    ap.add_argument("--instructions", action="store_true",
                    help="instructions per scrape at 64 and 1,000 segments alone (callgrind)")
    ap.add_argument("--publish", action="store_true", help="write the result into SOURCE/bench/results")
    a = ap.parse_args()
    build, source = os.path.abspath(a.build_dir), os.path.abspath(a.source_dir)
    exe = os.path.join(build, "tools", "billing-exporter", "billing-exporter")
    if not os.path.exists(workload(build)) or not os.path.exists(exe):
        print("bench/stats_workload or billing-exporter not built (-Dexporter, a Linux build with the stats writer)")
        return bt.SKIP
    if a.instructions:
        return instructions_only(build, exe)
    if a.publish and a.quick:
        print("reader_bench.py: --publish needs a full run (no --quick)", file=sys.stderr)
        return 2
    exes = {"this build": exe}
    if a.baseline:
        exes[a.baseline_label] = os.path.abspath(a.baseline)
    if a.quick:
        a.reps, a.live = 3, min(a.live, 8)
    started = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": {"kernel": os.uname().release, "cpu": machine_cpu(), "cores": os.cpu_count(),
                           "load_average_at_start": os.getloadavg()[0]}}
    res = dict(started, scrapes=a.reps, **measure(build, exes, a))
    res["summary"] = summary(res)
    res["targets"] = TARGETS
    print(markdown(res))
    print(json.dumps(res, indent=1))
    if a.publish:
        publish(source, {"markdown": markdown(res), "json": res})
    return 0


if __name__ == "__main__":
    sys.exit(main())

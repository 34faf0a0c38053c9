#!/usr/bin/env python3
"""The stats path's benchmark: what always-on in-process counting costs.

  stats_bench.py --build-dir BUILD --source-dir SOURCE [--quick] [--reps N]
  stats_bench.py --build-dir BUILD --source-dir SOURCE --billingd-instructions
                 [--before-build-dir B --before-source-dir S [--before-label L]] [--publish]

1. Per event of each stats-fed probe (bench/stats_loop.c, untraced, one
   thread), beside the same loop in a stats build with BILLING_STATS=off,
   in a USDT-only build (an untraced site), and a relaxed atomic add: ns
   (the thread's CPU time; configurations interleaved in each repetition)
   and instructions (callgrind, over the same loop with the probes compiled
   out).  Targets (TARGETS): payment-auth (labels and two histograms)
   <= 10 ns and <= 100 instructions, error (a labelled counter) <= 5 ns and
   <= 50 instructions.
2. Scaling: 8 threads on this machine's cores against one thread, events
   per second per core.  Target: >= 0.9x (no line two threads write).
3. /metrics from stats (billing-exporter --stats-dir, no BPF) with ~1,000
   series: median of 50 scrapes over HTTP.  Target: <= 5 ms.  The segment's
   size per thread and for 64 threads.
5. (before 4 in a run) The slow-request trails (trails()): a probe inside
   a request with the trails on against off; target <= 2x.
6. (before 4 in a run) The native buckets (native()): request-done and
   payment-auth with them on against BILLING_STATS_NATIVE=off.
4. billingd: instructions and clock reads per request under callgrind
   over a fixed schedule (billingd_bench.instructions), compiled out vs
   untraced vs stats, target <= 0.5 %; and at saturation with stats against
   probes compiled out, paired per repetition (billingd_bench's nested
   build), which on a shared machine is mostly noise.

Prints a Markdown table, then one JSON object (run_bench.py reads both).
--billingd-instructions measures 4's instructions alone (and another
build's beside them, as "before"); with --trails or --native those
parts alone; --publish writes what it measured into its own results file
(SOURCE/bench/results/stats-billingd-instructions.json, stats-trails.json,
stats-native.json: one run each, stamped) and rewrites what is generated
from them.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))
import billingd_bench  # noqa: E402
import exporter_bench  # noqa: E402  (its Exporter: a served billing-exporter)
from stats_tables import TARGETS, markdown, native_markdown, summary, trails_markdown  # noqa: E402

PROBES = ("request-done", "transaction-done", "invoice-create", "payment-auth", "refund-process", "error",
          "db-query-done", "gateway-call-done")
# What a count costs, measured beside the probes in the same run: a
# relaxed atomic add on one counter (a native bucket's add: lock-prefixed)
# and an add to a thread's own counter (a thread slot's cell: no lock).
COUNTS = ("atomic", "own")
# Per event, one thread: (ns, instructions over the compiled-out loop).
EVENT_TARGETS = {"payment-auth": (10.0, 100), "error": (5.0, 40)}
LOOPS = (("stats", "stats_loop", {}), ("stats off", "stats_loop", {"BILLING_STATS": "off"}),
         ("usdt", "stats_loop_usdt", {}))


def loop(exe, probe, threads, n, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([exe, probe, str(threads), str(n)], capture_output=True, text=True, env=e, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{exe} {probe}: {r.stderr.strip()}")
    vals = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    return float(vals["ns_per_event"]), float(vals["events_per_second"])


def callgrind_per_event(exe, probe, env, n=20000):
    """Instructions per iteration of stats_loop's loop (callgrind, its
    run() only), by difference of n and 2n events: the first events' slow
    path and the start-up cancel out."""
    counts = []
    for events in (n, 2 * n):
        work = tempfile.mkdtemp(prefix="stats-callgrind-")
        try:
            e = dict(os.environ, **env)
            r = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=run",
                                f"--callgrind-out-file={os.path.join(work, 'out')}", exe, probe, "1", str(events)],
                               capture_output=True, text=True, env=e, timeout=600)
        finally:
            subprocess.run(["rm", "-rf", work])
        m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
        if r.returncode != 0 or not m:
            raise RuntimeError(f"callgrind {exe} {probe}: {r.stderr[-300:]}")
        counts.append(int(m.group(1)))
    return (counts[1] - counts[0]) / n


def per_event(build, reps, n, workdir):
    env = {"BILLING_STATS_DIR": os.path.join(workdir, "loop")}
    loops = [(label, os.path.join(build, "bench", exe), extra) for label, exe, extra in LOOPS
             if os.path.exists(os.path.join(build, "bench", exe))]
    disabled = os.path.join(build, "bench", "stats_loop_disabled")
    runs = {(p, label): [] for p in PROBES + COUNTS for label, _, _ in loops}
    # Interleaved: every probe and configuration once per repetition, so a
    # busy moment of the machine lands on all of them.
    for _ in range(reps):
        for probe in PROBES + COUNTS:
            for label, exe, extra in loops:
                if probe in COUNTS and label != "stats":
                    continue
                runs[(probe, label)].append(loop(exe, probe, 1, n, dict(env, **extra))[0])
    rows = []
    for probe in PROBES + COUNTS:
        row = {"probe": probe}
        base = callgrind_per_event(disabled, probe, env) if os.path.exists(disabled) and probe not in COUNTS else 0.0
        if probe not in COUNTS:
            row["loop_instructions"] = base
        for label, exe, extra in loops:
            r = runs[(probe, label)]
            if not r:
                continue
            row[label] = {"median": statistics.median(r), "min": min(r), "max": max(r),
                          "instructions": callgrind_per_event(exe, probe, dict(env, **extra)) - base}
        if probe in EVENT_TARGETS and "stats" in row:
            ns, ir = EVENT_TARGETS[probe]
            row["target"] = {"ns": ns, "instructions": ir,
                             "met": row["stats"]["median"] <= ns and row["stats"]["instructions"] <= ir}
        rows.append(row)
        print(f"  {probe}: {row}", file=sys.stderr, flush=True)
    return rows


def trails(build, reps, n, workdir):
    """5. The slow-request trails: payment-auth fired inside requests of 30
    (stats_loop payment-auth-in-request, request-start and -done's trail
    work amortized over them) with the trails on and off
    (BILLING_STATS_SLOW=off), instructions (callgrind) and ns (interleaved
    runs); and outside any request, where the trails cost one load.
    Target: a probe inside a request costs at most 2x a plain stats event
    (TARGETS["trail_ratio"])."""
    exe = os.path.join(build, "bench", "stats_loop")
    env = {"BILLING_STATS_DIR": os.path.join(workdir, "trails")}
    off = dict(env, BILLING_STATS_SLOW="off")
    ns = {"on": [], "off": []}
    for _ in range(reps):
        ns["on"].append(loop(exe, "payment-auth-in-request", 1, n, env)[0])
        ns["off"].append(loop(exe, "payment-auth-in-request", 1, n, off)[0])
    out = {"in_request": {"instructions_on": callgrind_per_event(exe, "payment-auth-in-request", env),
                          "instructions_off": callgrind_per_event(exe, "payment-auth-in-request", off),
                          "ns_on": statistics.median(ns["on"]), "ns_off": statistics.median(ns["off"])},
           "no_request": {"instructions_on": callgrind_per_event(exe, "payment-auth", env),
                          "instructions_off": callgrind_per_event(exe, "payment-auth", off)}}
    r = out["in_request"]
    disabled = os.path.join(build, "bench", "stats_loop_disabled")
    # a plain stats event: payment-auth's own instructions, as part 1 counts them
    stats_event = callgrind_per_event(exe, "payment-auth", off) - callgrind_per_event(disabled, "payment-auth", off)
    r["trail_instructions"] = r["instructions_on"] - r["instructions_off"]
    r["trail_ns"] = r["ns_on"] - r["ns_off"]
    r["stats_event_instructions"] = stats_event
    r["instructions_ratio"] = r["trail_instructions"] / stats_event
    r["ns_ratio"] = r["trail_ns"] / r["ns_off"]
    cost = {}
    for probe in ("rdtsc", "atomic"):
        try:
            cost[probe] = statistics.median(loop(exe, probe, 1, n, env)[0] for _ in range(reps))
        except RuntimeError:
            pass  # no time-stamp counter on this machine
    out["machine_ns"] = cost
    out["target"] = {"ratio": TARGETS["trail_ratio"], "met": r["instructions_ratio"] <= TARGETS["trail_ratio"]}
    return out


def native(build, reps, n, workdir):
    """6. The native (exponential) buckets: request-done (one native
    quantity, its duration) and payment-auth (two: amount and duration)
    with the native buckets on and off (BILLING_STATS_NATIVE=off), the
    trails off in both; instructions (callgrind) and ns (interleaved)."""
    exe = os.path.join(build, "bench", "stats_loop")
    on = {"BILLING_STATS_DIR": os.path.join(workdir, "native"), "BILLING_STATS_SLOW": "off"}
    off = dict(on, BILLING_STATS_NATIVE="off")
    out = {}
    for probe, quantities in (("request-done", 1), ("payment-auth", 2)):
        ns = {"on": [], "off": []}
        for _ in range(reps):
            ns["on"].append(loop(exe, probe, 1, n, on)[0])
            ns["off"].append(loop(exe, probe, 1, n, off)[0])
        r = {"quantities": quantities,
             "instructions_on": callgrind_per_event(exe, probe, on),
             "instructions_off": callgrind_per_event(exe, probe, off),
             "ns_on": statistics.median(ns["on"]), "ns_off": statistics.median(ns["off"])}
        r["instructions_per_quantity"] = (r["instructions_on"] - r["instructions_off"]) / quantities
        r["ns_per_quantity"] = (r["ns_on"] - r["ns_off"]) / quantities
        out[probe] = r
    return out


def scaling(build, reps, n, workdir):
    """Events per second per core at 1 and at 8 threads, from each thread's
    CPU time per event (so other processes on the cores do not count: what
    is measured is what the threads cost each other), and the wall-clock
    figures beside them."""
    exe = os.path.join(build, "bench", "stats_loop")
    cores = os.cpu_count() or 1
    env = {"BILLING_STATS_DIR": os.path.join(workdir, "scale")}
    out = {"cores": cores}
    for probe in ("payment-auth", "atomic"):
        one = [loop(exe, probe, 1, n, env) for _ in range(reps)]
        eight = [loop(exe, probe, 8, n, env) for _ in range(reps)]
        ns1, ns8 = statistics.median(r[0] for r in one), statistics.median(r[0] for r in eight)
        out[probe] = {"one_thread_ns": ns1, "eight_threads_ns": ns8, "ratio": ns1 / ns8,
                      "one_thread_eps_wall": statistics.median(r[1] for r in one),
                      "eight_threads_eps_wall_per_core": statistics.median(r[1] for r in eight) / min(8, cores)}
    return out


def scrape(build, workdir):
    d = os.path.join(workdir, "scrape")
    wl = os.path.join(build, "bench", "stats_workload")
    exe = os.path.join(build, "tools", "billing-exporter", "billing-exporter")
    if not os.path.exists(wl) or not os.path.exists(exe):
        return {"skipped": "needs bench/stats_workload and billing-exporter in the build"}
    r = subprocess.run([wl, "labels", "64"], capture_output=True, text=True, env=dict(os.environ, BILLING_STATS_DIR=d))
    if r.returncode != 0:
        raise RuntimeError("stats_workload labels: " + r.stderr)
    path = r.stdout.split()[-1]
    with open(path, "rb") as f:
        head = f.read(128)
    slot_size = int.from_bytes(head[112:120], "little")
    slots_offset = int.from_bytes(head[104:112], "little")
    ex = exporter_bench.Exporter(exe, "--stats-dir", d, "--metrics", "all")
    try:
        times, body = [], b""
        for _ in range(50):
            t0 = time.perf_counter()
            with urllib.request.urlopen(ex.url + "/metrics", timeout=10) as resp:
                body = resp.read()
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        ex.stop()
    series = sum(1 for l in body.decode().splitlines() if l and not l.startswith("#"))
    return {"series": series, "scrape_ms_median": statistics.median(times), "scrape_ms_max": max(times),
            "slot_bytes": slot_size, "fixed_bytes": slots_offset,
            "bytes_64_threads": slots_offset + 65 * slot_size}


def billingd(build, source, reps, duration):
    load = billingd_bench.billing_load_runner(os.path.join(build, "examples", "billing-load", "billing-load"))
    stats_exe = os.path.join(build, "examples", "billingd", "billingd-stats")
    if not os.path.exists(stats_exe):
        return {"skipped": "examples/billingd/billingd-stats not built (-Dexamples)"}
    compiled_out = billingd_bench.noprobes_billingd(build, source)
    workdir = tempfile.mkdtemp(prefix="billing-statsbench-", dir="/dev/shm")
    os.environ["BILLING_STATS_DIR"] = os.path.join(workdir, "segments")
    samples = {"compiled out": [], "stats": []}
    try:
        for rep in range(reps):
            for label, exe in (("compiled out", compiled_out), ("stats", stats_exe)):
                rps, _ = billingd_bench.one_run(exe, load, None, duration, 16, workdir)
                samples[label].append(rps)
                print(f"  billingd {label}: run {rep + 1}: {rps:.0f} req/s", file=sys.stderr, flush=True)
    finally:
        subprocess.run(["rm", "-rf", workdir])
    paired = [100.0 * (a / b - 1) for a, b in zip(samples["stats"], samples["compiled out"])]
    return {"instructions": billingd_bench.instructions(build, source), "repetitions": reps, "duration_s": duration,
            "rps": samples, "paired_pct": paired,
            "median_pct": statistics.median(paired), "spread_pct": [min(paired), max(paired)]}


def trails_off_row(build, base):
    """billingd-stats with BILLING_STATS_SLOW=off, measured as
    billingd_bench.instructions measures its configurations: the stats
    path's own share, apart from the slow-request trails'."""
    exe = os.path.join(build, "examples", "billingd", "billingd-stats")
    if not os.path.exists(exe):
        return None
    keep = {k: os.environ.get(k) for k in ("BILLING_STATS_SLOW", "BILLING_STATS_DIR")}
    workdir = tempfile.mkdtemp(prefix="billing-callgrind-", dir="/dev/shm")
    os.environ.update(BILLING_STATS_SLOW="off", BILLING_STATS_DIR=os.path.join(workdir, "segments"))
    try:
        per = []
        for _ in range(2):
            a = billingd_bench.callgrind_run(exe, billingd_bench.SCHEDULE_FLOWS, workdir)
            b = billingd_bench.callgrind_run(exe, 2 * billingd_bench.SCHEDULE_FLOWS, workdir)
            n = b["requests"] - a["requests"]
            per.append({"instructions": (b["instructions"] - a["instructions"]) / n,
                        "clock_reads": (b["clock_calls"] - a["clock_calls"]) / n,
                        "rdtsc": (b["rdtsc"] - a["rdtsc"]) / n, "requests": n})
    finally:
        for k, v in keep.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        subprocess.run(["rm", "-rf", workdir])
    row = {"config": "stats, trails off (BILLING_STATS_SLOW=off)", "runs": per,
           "instructions_per_request": statistics.median(p["instructions"] for p in per),
           "clock_reads_per_request": statistics.median(p["clock_reads"] for p in per),
           "rdtsc_per_request": statistics.median(p["rdtsc"] for p in per)}
    if base:
        row["vs_compiled_out_pct"] = 100.0 * (row["instructions_per_request"] / base["instructions_per_request"] - 1)
    return row


def billingd_instructions(a, build, source):
    """--billingd-instructions: billingd's instructions per request alone
    (and with the trails off: the stats path's own share)."""
    if bool(a.before_build_dir) != bool(a.before_source_dir):
        print("stats_bench.py: --before-build-dir and --before-source-dir go together", file=sys.stderr)
        return 2
    res = billingd_bench.instructions(build, source)
    if "rows" in res:
        base = next((r for r in res["rows"] if r["config"].startswith("compiled out") and "skipped" not in r), None)
        row = trails_off_row(build, base)
        if row:
            res["rows"].append(row)
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if a.before_build_dir:
        before_source = os.path.abspath(a.before_source_dir)
        res["before"] = billingd_bench.instructions(os.path.abspath(a.before_build_dir), before_source)
        res["before"]["source"] = a.before_label or before_source
    if a.publish:
        import published

        def update(latest):
            stats = latest["stats"]["json"]
            stats["billingd"]["instructions"] = res
            stats["summary"] = summary(stats)
            latest["stats"]["markdown"] = markdown(stats)
        published.publish_part(source, update)
    print("\n".join(billingd_bench.instructions_markdown(res)))
    print(json.dumps(res, indent=1))
    return 0


def instructions_only(build):
    """--instructions: each stats-fed probe's instructions per event
    (callgrind, bench/stats_loop less the compiled-out loop), the default
    settings (native buckets and trails on) beside BILLING_STATS_NATIVE=off
    and BILLING_STATS_SLOW=off; error and payment-auth against their
    targets.  No timing: the figures the perf budgets hold."""
    exe, disabled = os.path.join(build, "bench", "stats_loop"), os.path.join(build, "bench", "stats_loop_disabled")
    if not os.path.exists(exe) or not os.path.exists(disabled):
        print("stats_loop not built: the stats writer is for Linux (docs/stats.md)")
        return 77
    workdir = tempfile.mkdtemp(prefix="billing-statsinstr-", dir="/dev/shm")
    env = {"BILLING_STATS_DIR": os.path.join(workdir, "loop")}
    configs = (("default", {}), ("BILLING_STATS_NATIVE=off", {"BILLING_STATS_NATIVE": "off"}),
               ("BILLING_STATS_SLOW=off", {"BILLING_STATS_SLOW": "off"}))
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": []}
    try:
        for probe in PROBES:
            base = callgrind_per_event(disabled, probe, env)
            row = {"probe": probe, "loop_instructions": base}
            for label, extra in configs:
                row[label] = callgrind_per_event(exe, probe, dict(env, **extra)) - base
            if probe in EVENT_TARGETS:
                row["target"] = EVENT_TARGETS[probe][1]
            res["rows"].append(row)
    finally:
        subprocess.run(["rm", "-rf", workdir])
    print("| stats-fed probe | instructions per event, default | BILLING_STATS_NATIVE=off | BILLING_STATS_SLOW=off "
          "| target |\n|---|---:|---:|---:|---|")
    for r in res["rows"]:
        t = r.get("target")
        verdict = f"<= {t}: {'met' if r['default'] <= t else 'MISSED'}" if t else ""
        print(f"| {r['probe']} | {r['default']:.0f} | {r['BILLING_STATS_NATIVE=off']:.0f} | "
              f"{r['BILLING_STATS_SLOW=off']:.0f} | {verdict} |")
    print(json.dumps(res, indent=1))
    return 0


def part_only(a, build, source, key, measure, lines):
    """--trails or --native: that part alone, published into the stats part."""
    workdir = tempfile.mkdtemp(prefix=f"billing-{key}-", dir="/dev/shm")
    try:
        res = measure(build, 2 if a.quick else a.reps, 500000 if a.quick else 5000000, workdir)
    finally:
        subprocess.run(["rm", "-rf", workdir])
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if a.publish:
        import published

        def update(latest):
            stats = latest["stats"]["json"]
            stats[key] = res
            stats["summary"] = summary(stats)
            latest["stats"]["markdown"] = markdown(stats)
        published.publish_part(source, update)
    print("\n".join(lines(res)))
    print(json.dumps(res, indent=1))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--billingd-instructions", action="store_true",
                    help="only billingd's instructions per request under callgrind (part 4)")
    ap.add_argument("--before-build-dir", help="also measure this build (e.g. the parent commit's), reported as before")
    ap.add_argument("--before-source-dir", help="its source tree (for its compiled-out build)")
    ap.add_argument("--before-label", help="what the before build is, e.g. \"parent 63d1c71\"")
    ap.add_argument("--trails", action="store_true", help="only the slow-request trails' cost (part 5)")
    ap.add_argument("--native", action="store_true", help="only the native buckets' cost (part 6)")
    ap.add_argument("--instructions", action="store_true",
                    help="only each probe's instructions per event (callgrind): default settings, native buckets off, "
                         "trails off")
    ap.add_argument("--publish", action="store_true",
                    help="with --billingd-instructions, --trails or --native: write the result into "
                         "its own file in SOURCE/bench/results (one run, stamped)")
    a = ap.parse_args()
    build, source = os.path.abspath(a.build_dir), os.path.abspath(a.source_dir)
    if a.instructions:
        return instructions_only(build)
    if a.trails:
        return part_only(a, build, source, "trails", trails, trails_markdown)
    if a.native:
        return part_only(a, build, source, "native", native, native_markdown)
    if a.publish and not a.billingd_instructions:
        print("stats_bench.py: --publish goes with --billingd-instructions, --trails or --native (a whole run "
              "publishes through "
              "run_bench.py --publish)", file=sys.stderr)
        return 2
    if a.billingd_instructions:
        return billingd_instructions(a, build, source)
    if not os.path.exists(os.path.join(build, "bench", "stats_loop")):
        print("stats_loop not built: the stats writer is for Linux (docs/stats.md)")
        return 77
    reps = 2 if a.quick else a.reps
    n = 500000 if a.quick else 5000000
    workdir = tempfile.mkdtemp(prefix="billing-statsloop-", dir="/dev/shm")
    try:
        res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
               "load_average": os.getloadavg()[0],
               "per_event": per_event(build, reps, n, workdir), "scaling": scaling(build, reps, n, workdir),
               "trails": trails(build, reps, n, workdir), "native": native(build, reps, n, workdir),
               "scrape": scrape(build, workdir)}
    finally:
        subprocess.run(["rm", "-rf", workdir])
    res["billingd"] = billingd(build, source, 1 if a.quick else reps, 3 if a.quick else 8)
    res["summary"] = summary(res)
    print(markdown(res))
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""billing-probes benchmark: what a probe costs, beside what services do instead.

Run through meson (builds the programs first):
    meson compile -C BUILD bench          # or: meson test -C BUILD --benchmark
or directly, once built:
    python3 bench/run_bench.py --build-dir BUILD --source-dir . [--publish]

Parts (all in one run, on one machine, one build: -O2 -g):
  1 untraced cost per probe site, in instructions (callgrind; perf stat if
    the machine has an instruction counter)
  2 traced cost per fire, in ns, under bpftrace: standard 1-byte site vs
    fast 5-byte site, count() and a biz_metrics-like aggregation; and how
    long bpftrace takes to start
  3 what services do instead, per event: a log line with fprintf, syslog,
    an atomic counter, a log2 histogram
  4 billingd end to end with billing-load: compiled out, untraced, traced
Prints a Markdown table and writes BUILD/bench/results.md and .json;
--publish also copies them to SOURCE/bench/results/latest.{md,json}.
Parts 2 and 4's traced rows need root and bpftrace; without them they are
reported as skipped, with the reason.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import billingd_bench

SITES = 8  # probe sites in sites_loop.c's handle()


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    bpftrace = run(["bpftrace", "--version"]).stdout.strip() if shutil.which("bpftrace") else "not installed"
    cc = run(["cc", "--version"]).stdout.splitlines()[0] if shutil.which("cc") else "?"
    return {"kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count(),
            "bpftrace": bpftrace, "compiler": cc, "load_average_at_start": os.getloadavg()[0]}


def can_trace():
    if os.geteuid() != 0:
        return "skipped: needs root (bpftrace attaches uprobes)"
    if not shutil.which("bpftrace"):
        return "skipped: needs bpftrace"
    if run(["mountpoint", "-q", "/sys/kernel/tracing"]).returncode != 0:
        run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"])
    return None


def summary(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "runs": values}


# --- part 1: instructions per untraced site ----------------------------------

def callgrind_ir(binary, n):
    out = tempfile.mktemp(prefix="bench-callgrind-")
    r = run(["valgrind", "--tool=callgrind", "--toggle-collect=bench_loop",
             f"--callgrind-out-file={out}", binary, str(n)])
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if os.path.exists(out):
        os.unlink(out)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"callgrind {binary}: {r.stderr[-500:]}")
    return int(m.group(1))


def perf_instructions(binary, n):
    r = run(["perf", "stat", "-x,", "-e", "instructions:u", binary, str(n)])
    for line in r.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and "instructions" in f[2]:
            return int(f[0]) if f[0].isdigit() else None
    return None


def hot_path(binary):
    """Instructions of handle() up to its first ret: the untraced path."""
    dis = run(["objdump", "-d", "--no-show-raw-insn", binary]).stdout
    m = re.search(r"<handle>:\n(.*?)\n\n", dis, re.S)
    insns = []
    for line in (m.group(1).splitlines() if m else []):
        parts = line.split("\t")
        if len(parts) >= 2:
            insns.append(parts[1].split()[0])
            if insns[-1] == "ret":
                break
    return insns


def part1(bench_dir, n):
    variants = [("disabled", "compiled out (-DBILLING_PROBES_DISABLE)"),
                ("scalar", "compiled in, untraced: scalar and literal arguments"),
                ("guarded", "compiled in, untraced: computed/string arguments behind the guard"),
                ("fast", "compiled in, untraced: 5-byte fast site, scalar arguments")]
    perf_ok = shutil.which("perf") is not None and perf_instructions("/bin/true", 0) is not None
    rows, base = [], None
    for key, label in variants:
        binary = os.path.join(bench_dir, "sites_" + key)
        if not os.path.exists(binary):
            rows.append({"variant": key, "label": label, "skipped": "not built (probes disabled in this build?)"})
            continue
        ir = callgrind_ir(binary, n)
        hot = hot_path(binary)
        row = {"variant": key, "label": label, "ir_total": ir, "ir_per_call": ir / n,
               "hot_path_instructions": len(hot),
               "semaphore_checks_on_hot_path": sum(1 for i in hot if i.startswith("cmpw"))}
        if key == "disabled":
            base = row
        if base:
            row["extra_per_call"] = (ir - base["ir_total"]) / n
            row["extra_per_site"] = row["extra_per_call"] / SITES
            # Each untraced site is a compare of its semaphore and a branch
            # (2 instructions); what is left is paid once per function
            # (register moves, saves for the cold firing paths).
            row["extra_per_function"] = row["extra_per_call"] - 2 * row["semaphore_checks_on_hot_path"]
        if perf_ok:
            a, b = perf_instructions(binary, n), perf_instructions(binary, 2 * n)
            row["perf_instructions_per_call"] = (b - a) / n if a is not None and b is not None else None
        rows.append(row)
    if perf_ok and base:
        for row in rows:
            if row.get("perf_instructions_per_call") is not None and base.get("perf_instructions_per_call") is not None:
                row["perf_extra_per_site"] = (row["perf_instructions_per_call"] - base["perf_instructions_per_call"]) / SITES
    return {"iterations": n, "sites_per_call": SITES, "rows": rows,
            "perf_stat": "ok" if perf_ok else "not supported (perf stat -e instructions: <not supported> on this machine)"}


# --- part 2: ns per fire under bpftrace ---------------------------------------

SCRIPTS = {
    "count": "usdt:{bin}:billing:payment__auth {{ @fires = count(); }}",
    "biz_metrics-like": ("usdt:{bin}:billing:payment__auth {{ @auths[str(arg2), str(arg3), arg4] = count(); "
                         "@amount_minor[str(arg2), str(arg3)] = sum(arg1); }}"),
}


def fire_once(binary, n, script=None):
    """(ns per fire, seconds from bpftrace launch to the program running)."""
    launched = time.time_ns()
    if script:
        r = run(["bpftrace", "-e", script.format(bin=binary), "-c", f"{binary} {n}"], timeout=600)
    else:
        r = run([binary, str(n)])
    m = re.search(r"started_at_ns=(\d+) traced=(\d) fires=\d+ ns_per_fire=([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"{binary} ({'traced' if script else 'untraced'}): {r.stdout[-300:]} {r.stderr[-300:]}")
    if script and m.group(2) != "1":
        raise RuntimeError(f"{binary}: ran under bpftrace but its probe was not enabled")
    return float(m.group(3)), (int(m.group(1)) - launched) / 1e9


def optimized_fires(binary, n):
    """How many of N fires took the optimized path: the kernel's trampoline
    enters through the uprobe syscall (x86-64 number 336), an int3 does not."""
    prog = ("usdt:%s:billing:payment__auth { @fires = count(); } "
            "tracepoint:raw_syscalls:sys_enter /pid == cpid && args->id == 336/ { @uprobe_syscalls = count(); }"
            % binary)
    r = run(["bpftrace", "-e", prog, "-c", f"{binary} {n}"], timeout=300)
    fires = re.search(r"@fires: (\d+)", r.stdout)
    calls = re.search(r"@uprobe_syscalls: (\d+)", r.stdout)
    return {"fires": int(fires.group(1)) if fires else 0,
            "through_uprobe_syscall": int(calls.group(1)) if calls else 0}


def part2(bench_dir, n, reps, skip):
    sites = [(s, os.path.join(bench_dir, "fire_" + s)) for s in ("standard", "fast")]
    sites = [(s, b) for s, b in sites if os.path.exists(b)]
    result = {"fires_per_run": n, "repetitions": reps, "rows": []}
    # Sites and programs interleaved within each repetition: a busy moment
    # of the machine then lands on all of them, not on one row.
    untraced = {s: [] for s, _ in sites}
    traced = {(s, name): [] for s, _ in sites for name in SCRIPTS}
    for _ in range(reps):
        for site, binary in sites:
            untraced[site].append(fire_once(binary, n)[0])
            for name, script in SCRIPTS.items():
                if not skip:
                    traced[(site, name)].append(fire_once(binary, n, script))
    for site, binary in sites:
        base = summary(untraced[site])
        result["rows"].append({"site": site, "script": "untraced", "ns_per_fire": base})
        for name in SCRIPTS:
            if skip:
                result["rows"].append({"site": site, "script": name, "skipped": skip})
                continue
            runs = traced[(site, name)]
            row = {"site": site, "script": name,
                   "ns_per_fire": summary([t - base["median"] for t, _ in runs])}
            if name == "count":
                row["bpftrace_start_s"] = summary([s for _, s in runs])
            result["rows"].append(row)
    fast = dict(sites).get("fast")
    if fast and not skip:
        result["fast_site_check"] = optimized_fires(fast, 100000)
    by = {(r["site"], r["script"]): r for r in result["rows"] if "ns_per_fire" in r}
    for name in SCRIPTS:
        if ("standard", name) in by and ("fast", name) in by:
            result.setdefault("fast_vs_standard", {})[name] = {
                k: by[("fast", name)]["ns_per_fire"][k] / by[("standard", name)]["ns_per_fire"][k]
                for k in ("min", "median")}
    return result


# --- part 3: what services do instead -----------------------------------------

def part3(bench_dir, n, reps):
    binary = os.path.join(bench_dir, "alternatives")
    modes = [("fprintf", "formatted log line, fprintf to a line-buffered file in /tmp", n),
             ("syslog", "the same line through syslog(3)", max(n // 10, 1000)),
             ("atomic", "atomic counter (C11, relaxed)", 10 * n),
             ("histogram", "log2 histogram of duration_ns (C11 atomics)", 10 * n)]
    rows = []
    log = tempfile.mktemp(prefix="billing-bench-", suffix=".log")
    for mode, label, events in modes:
        if mode == "syslog" and not os.path.exists("/dev/log"):
            rows.append({"mode": mode, "label": label, "skipped": "no syslog daemon here (/dev/log absent)"})
            continue
        times = []
        for _ in range(reps):
            r = run([binary, mode, str(events), log])
            m = re.search(r"counted=(\d+) ns_per_event=([\d.]+)", r.stdout)
            if r.returncode != 0 or not m:
                raise RuntimeError(f"alternatives {mode}: {r.stdout} {r.stderr}")
            times.append(float(m.group(2)))
        rows.append({"mode": mode, "label": label, "events_per_run": events, "ns_per_event": summary(times)})
    if os.path.exists(log):
        os.unlink(log)
    return {"repetitions": reps, "rows": rows}


# --- the table -----------------------------------------------------------------

def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def markdown(res, command):
    m = res["machine"]
    o = ["## Benchmark results", "",
         f"Measured {res['date']} on Linux {m['kernel']}, {m['cpu']}, {m['cores']} cores "
         f"(load average {m['load_average_at_start']:.2f} at start), {m['compiler']}, {m['bpftrace']}; "
         f"build: -O2 -g (meson buildtype debugoptimized).", "",
         f"Command: `{command}`", ""]
    p1 = res["part1"]
    o += ["### 1. Untraced probe sites: instructions (callgrind, exact)", "",
          f"{p1['iterations']:,} calls of a handler with {p1['sites_per_call']} probe sites; "
          f"perf stat: {p1['perf_stat']}.", "",
          "| build | instructions per call | extra per call | extra per site | of which: per site (check + branch) / per function | target |",
          "|---|---:|---:|---:|---:|---|"]
    targets = {"disabled": (0, "0"), "scalar": (2, "<= 2 per site"), "guarded": (4, "<= 4 per site"),
               "fast": (2, "<= 2 per site")}
    for r in p1["rows"]:
        if "skipped" in r:
            o.append(f"| {r['label']} | {r['skipped']} | | | | |")
            continue
        extra = r.get("extra_per_site")
        split = "-"
        if r.get("extra_per_function") is not None and r["semaphore_checks_on_hot_path"]:
            split = f"{2 * r['semaphore_checks_on_hot_path'] / SITES:.0f} / {r['extra_per_function']:.1f}"
        o.append(f"| {r['label']} | {fmt(r['ir_per_call'], 2)} | {fmt(r.get('extra_per_call'), 2)} | "
                 f"{fmt(extra, 3)} | {split} | {targets[r['variant']][1]}: "
                 f"{'met' if extra is not None and extra <= targets[r['variant']][0] + 1e-9 else 'MISSED'} |")
    p2 = res["part2"]
    o += ["", "### 2. Traced: ns per fire under bpftrace", "",
          f"{p2['fires_per_run']:,} fires of payment-auth per run, {p2['repetitions']} runs; "
          "traced loop time minus the untraced loop time.", "",
          "| site | bpftrace program | min ns/fire | median ns/fire | max ns/fire |", "|---|---|---:|---:|---:|"]
    for r in p2["rows"]:
        if "skipped" in r:
            o.append(f"| {r['site']} | {r['script']} | {r['skipped']} | | |")
        else:
            s = r["ns_per_fire"]
            o.append(f"| {r['site']} | {r['script']} | {fmt(s['min'], 2)} | {fmt(s['median'], 2)} | {fmt(s['max'], 2)} |")
    for name, ratio in p2.get("fast_vs_standard", {}).items():
        o.append(f"\nFast / standard, {name}: {ratio['min']:.2f}x (min), {ratio['median']:.2f}x (median); "
                 f"target <= 0.55x: {'met' if ratio['median'] <= 0.55 else 'MISSED'}.")
    chk = p2.get("fast_site_check")
    if chk:
        o.append(f"\nFast site optimized by the kernel: {chk['through_uprobe_syscall']:,} of {chk['fires']:,} fires "
                 "entered through the uprobe syscall (trampoline); the first one traps (int3) and triggers the rewrite.")
    starts = [r for r in p2["rows"] if "bpftrace_start_s" in r]
    for r in starts:
        s = r["bpftrace_start_s"]
        o.append(f"\nbpftrace start ({r['site']} site, count()): launch to traced program running "
                 f"(probes attached): min {s['min']:.2f} s, median {s['median']:.2f} s.")
    p3 = res["part3"]
    o += ["", "### 3. What services do instead, per event", "",
          "| instead of a probe | events per run | min ns/event | median ns/event | vs fast-site count() fire (median) |",
          "|---|---:|---:|---:|---:|"]
    fast_count = next((r["ns_per_fire"]["median"] for r in p2["rows"]
                       if r["site"] == "fast" and r["script"] == "count" and "ns_per_fire" in r), None)
    untraced = next((r["ns_per_fire"]["median"] for r in p2["rows"]
                     if r["site"] == "standard" and r["script"] == "untraced"), None)
    if untraced is not None:
        o.append(f"| a probe nobody traces (loop incl. guard) | {p2['fires_per_run']:,} | | {fmt(untraced, 2)} | |")
    for r in p3["rows"]:
        if "skipped" in r:
            o.append(f"| {r['label']} | {r['skipped']} | | | |")
            continue
        s = r["ns_per_event"]
        ratio = f"{s['median'] / fast_count:.2f}x" if fast_count else "-"
        o.append(f"| {r['label']} | {r['events_per_run']:,} | {fmt(s['min'], 2)} | {fmt(s['median'], 2)} | {ratio} |")
    o += [""] + billingd_bench.markdown(res["part4"])
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--parts", default="1,2,3,4", help="comma-separated parts to run (default all)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of timed runs (default 5)")
    ap.add_argument("--quick", action="store_true", help="fewer events and runs: a smoke run, not figures")
    ap.add_argument("--publish", action="store_true",
                    help="also write SOURCE/bench/results/latest.{md,json}")
    ap.add_argument("--render", metavar="JSON", help="print the table of an earlier run's JSON and exit")
    a = ap.parse_args()
    if a.render:
        with open(a.render) as f:
            res = json.load(f)
        for row in res["part4"].get("rows", []):
            base = next((b for b in res["part4"]["rows"] if b["config"].startswith("compiled out") and "rps" in b), None)
            if "rps" in row and base and "throughput_paired_pct" not in row:
                billingd_bench.add_paired(row, {"rps": row["rps"]["runs"], "p99_ms": row["p99_ms"]["runs"]},
                                          {"rps": base["rps"]["runs"], "p99_ms": base["p99_ms"]["runs"]})
        print(markdown(res, res["command"]), end="")
        return 0
    bench_dir = os.path.join(os.path.abspath(a.build_dir), "bench")
    parts = {int(p) for p in a.parts.split(",")}
    reps = 2 if a.quick else a.reps
    n_sites = 20000 if a.quick else 200000
    n_fire = 100000 if a.quick else 1000000
    skip = can_trace()
    command = "meson compile -C BUILD bench   (python3 bench/run_bench.py --build-dir BUILD --source-dir . --publish)"
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
           "command": command, "trace": skip or "ok"}
    print(f"billing-probes benchmark on {res['machine']['kernel']}, {res['machine']['cpu']}; "
          f"tracing: {skip or 'yes'}", flush=True)
    res["part1"] = part1(bench_dir, n_sites) if 1 in parts else {"iterations": 0, "sites_per_call": SITES, "rows": [], "perf_stat": "not run"}
    print("part 1 done", flush=True)
    res["part2"] = part2(bench_dir, n_fire, reps, skip) if 2 in parts else {"fires_per_run": 0, "repetitions": 0, "rows": []}
    print("part 2 done", flush=True)
    res["part3"] = part3(bench_dir, n_fire, reps) if 3 in parts else {"rows": []}
    print("part 3 done", flush=True)
    res["part4"] = billingd_bench.part4(os.path.abspath(a.build_dir), os.path.abspath(a.source_dir),
                                        reps=5 if not a.quick else 1, duration=8 if not a.quick else 3,
                                        skip=skip) if 4 in parts else {"rows": [], "skipped": "not run"}
    md = markdown(res, command)
    print("\n" + md)
    outs = [bench_dir]
    if a.publish:
        outs.append(os.path.join(a.source_dir, "bench", "results"))
    for d in outs:
        os.makedirs(d, exist_ok=True)
        name = "latest" if d != bench_dir else "results"
        with open(os.path.join(d, name + ".md"), "w") as f:
            f.write(md)
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(res, f, indent=2)
        print(f"wrote {os.path.join(d, name)}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

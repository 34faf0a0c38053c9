#!/usr/bin/env python3
"""billing-probes benchmark: what a probe costs, beside what services do instead.

Run through meson (builds the programs first):
    meson compile -C BUILD bench          # or: meson test -C BUILD --benchmark
or directly, once built:
    python3 bench/run_bench.py --build-dir BUILD --source-dir . [--publish]

Parts (all in one run, on one machine, one build: -O2 -g), named as in
--parts and in the JSON:
  untraced      untraced cost per probe site, in instructions (callgrind;
                perf stat if the machine has an instruction counter)
  traced        traced cost per fire, in ns, under bpftrace: standard 1-byte
                site vs fast 5-byte site, count() and a biz_metrics-like
                aggregation; and how long bpftrace takes to start
  alternatives  what services do instead, per event: a log line with
                fprintf, syslog, an atomic counter, a log2 histogram
  billingd      billingd end to end with billing-load: compiled out,
                untraced, traced by the shipped scripts (billingd_bench.py)
  exporter      bench/exporter_bench.py, when present (see run_exporter)
  stats         bench/stats_bench.py: stats-fed probes per event, scaling, /metrics from stats, billingd
  reading       bench/reader_bench.py: /metrics time, instructions and RSS against stats segment count
Prints a Markdown table and writes BUILD/bench/results.md and .json;
--publish also writes SOURCE/bench/results/latest.{md,json} and the figures
section of SOURCE/bench/README.md.  Traced rows need what
tests/lib/billingtest.py's why_no_tracing() asks for (root, bpftrace,
tracefs); without it they are reported as skipped, with the reason.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import billingd_bench
from firing import TRACED_PROGRAMS, fire_once, optimized_fires, run, summary

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import billingtest as bt  # noqa: E402

SITES = 8  # probe sites in sites_loop.c's handle()
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))

# The untraced-sites table, one line per variant: the binary
# BUILD/bench/sites_NAME (built in bench/meson.build), its label, and the
# target in extra instructions per site.  A variant that is not built is
# reported as such, so a line may stay while a build option is off.
UNTRACED_VARIANTS = [
    ("disabled", "compiled out (-DBILLING_PROBES_DISABLE)", 0),
    ("scalar", "compiled in, untraced: scalar and literal arguments", 2),
    ("guarded", "compiled in, untraced: computed/string arguments behind the guard", 4),
    ("fast", "compiled in, untraced: 5-byte fast site, scalar arguments", 2),
    # Function sites (docs/function-sites.md): a call and a return, the
    # argument registers and a load per string; no guard, so the guarded
    # arguments are always computed (no target: that is the figure).
    ("function", "function sites (-Dprobe_site=function), untraced: scalar and literal arguments", 12),
    ("function_guarded", "function sites, untraced: the guarded arguments, always evaluated", None),
]


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
    """None when bpftrace can attach here, else the reason the traced rows
    are skipped (the test library's answer, so bench and tests agree)."""
    why = bt.why_no_tracing("bpftrace")
    return "skipped: " + why if why else None


# --- untraced: instructions per untraced site -------------------------------

def callgrind_ir(binary, n):
    work = tempfile.mkdtemp(prefix="bench-callgrind-")  # private: no name another user can take first
    out = os.path.join(work, "callgrind.out")
    try:
        r = run(["valgrind", "--tool=callgrind", "--toggle-collect=bench_loop",
                 f"--callgrind-out-file={out}", binary, str(n)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
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


def untraced_sites(bench_dir, n):
    perf_ok = shutil.which("perf") is not None and perf_instructions("/bin/true", 0) is not None
    rows, base = [], None
    for key, label, target in UNTRACED_VARIANTS:
        binary = os.path.join(bench_dir, "sites_" + key)
        if not os.path.exists(binary):
            rows.append({"variant": key, "label": label, "target_per_site": target,
                         "skipped": "not built (probes disabled in this build?)"})
            continue
        ir = callgrind_ir(binary, n)
        hot = hot_path(binary)
        row = {"variant": key, "label": label, "target_per_site": target,
               "ir_total": ir, "ir_per_call": ir / n,
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


# --- traced: ns per fire under bpftrace --------------------------------------

def traced_fires(bench_dir, n, reps, skip):
    sites = [(s, os.path.join(bench_dir, "fire_" + s)) for s in ("standard", "fast")]
    sites = [(s, b) for s, b in sites if os.path.exists(b)]
    result = {"fires_per_run": n, "repetitions": reps, "rows": []}
    # Sites and programs interleaved within each repetition: a busy moment
    # of the machine then lands on all of them, not on one row.
    untraced = {s: [] for s, _ in sites}
    traced = {(s, name): [] for s, _ in sites for name in TRACED_PROGRAMS}
    for _ in range(reps):
        for site, binary in sites:
            untraced[site].append(fire_once(binary, n)[0])
            for name, script in TRACED_PROGRAMS.items():
                if not skip:
                    traced[(site, name)].append(fire_once(binary, n, script))
    for site, binary in sites:
        base = summary(untraced[site])
        result["rows"].append({"site": site, "script": "untraced", "ns_per_fire": base})
        for name in TRACED_PROGRAMS:
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
    for name in TRACED_PROGRAMS:
        if ("standard", name) in by and ("fast", name) in by:
            result.setdefault("fast_vs_standard", {})[name] = {
                k: by[("fast", name)]["ns_per_fire"][k] / by[("standard", name)]["ns_per_fire"][k]
                for k in ("min", "median")}
    return result


# --- alternatives: what services do instead ---------------------------------

def alternatives(bench_dir, n, reps):
    binary = os.path.join(bench_dir, "alternatives")
    modes = [("fprintf", "formatted log line, fprintf to a line-buffered file in /tmp", n),
             ("syslog", "the same line through syslog(3)", max(n // 10, 1000)),
             ("atomic", "atomic counter (C11, relaxed)", 10 * n),
             ("histogram", "log2 histogram of duration_ns (C11 atomics)", 10 * n)]
    rows = []
    work = tempfile.mkdtemp(prefix="billing-bench-")  # private: no name another user can take first
    log = os.path.join(work, "alternatives.log")
    try:
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
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"repetitions": reps, "rows": rows}


# --- exporter: bench/exporter_bench.py, when present ---------------------------

def run_exporter(build_dir, source_dir, quick, name="exporter_bench.py"):
    """Runs bench/exporter_bench.py, a standalone program of the exporter's
    own: called with --build-dir BUILD --source-dir SOURCE [--quick], it
    prints a Markdown table, then one JSON object as the rest of its output.
    The JSON may hold "summary": [[what, result, target], ...], rows for
    bench/README.md's summary.  Exit 77 is a skip; its output's last line
    says why."""
    script = os.path.join(BENCH_DIR, name)
    if not os.path.exists(script):
        return None
    cmd = [sys.executable, script, "--build-dir", build_dir, "--source-dir", source_dir]
    try:
        r = run(cmd + (["--quick"] if quick else []), timeout=3600)
    except subprocess.TimeoutExpired:
        return {"error": f"{name} did not finish within an hour"}
    lines = r.stdout.rstrip().splitlines()
    if r.returncode == bt.SKIP:
        return {"skipped": lines[-1] if lines else f"{name} skipped without a reason"}
    if r.returncode != 0:
        return {"error": f"{name} exited {r.returncode}: {(r.stderr or r.stdout)[-300:]}"}
    for i, line in enumerate(lines):
        if line.startswith("{"):
            try:
                data = json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
            return {"markdown": "\n".join(lines[:i]).strip(), "json": data}
    return {"error": f"{name} printed no JSON object after its table"}


# --- the tables ------------------------------------------------------------------

def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def untraced_verdict(r):
    extra, target = r.get("extra_per_site"), r["target_per_site"]
    if target is None:
        return "no target: what it costs"
    return f"<= {target} per site: {'met' if extra is not None and extra <= target + 1e-9 else 'MISSED'}"


def by_site(res):
    return {(r["site"], r["script"]): r for r in res["traced"]["rows"] if "ns_per_fire" in r}


def markdown(res, command):
    """The whole result, every figure: bench/results/latest.md."""
    m = res["machine"]
    o = ["## Benchmark results", "",
         f"Measured {res['date']} on Linux {m['kernel']}, {m['cpu']}, {m['cores']} cores "
         f"(load average {m['load_average_at_start']:.2f} at start), {m['compiler']}, {m['bpftrace']}; "
         f"build: -O2 -g (meson buildtype debugoptimized).", "",
         f"Command: `{command}`", ""]
    if res.get("quick"):
        o += ["**Smoke run (--quick): few events and runs; these are not figures.**", ""]
    p1 = res["untraced"]
    o += ["### Untraced probe sites: instructions (callgrind, exact)", "",
          f"{p1['iterations']:,} calls of a handler with {p1['sites_per_call']} probe sites; "
          f"perf stat: {p1['perf_stat']}.", "",
          "| build | instructions per call | extra per call | extra per site "
          "| of which: per site (check + branch) / per function | target |",
          "|---|---:|---:|---:|---:|---|"]
    for r in p1["rows"]:
        if "skipped" in r:
            o.append(f"| {r['label']} | {r['skipped']} | | | | |")
            continue
        split = "-"
        if r.get("extra_per_function") is not None and r["semaphore_checks_on_hot_path"]:
            split = f"{2 * r['semaphore_checks_on_hot_path'] / SITES:.0f} / {r['extra_per_function']:.1f}"
        o.append(f"| {r['label']} | {fmt(r['ir_per_call'], 2)} | {fmt(r.get('extra_per_call'), 2)} | "
                 f"{fmt(r.get('extra_per_site'), 3)} | {split} | {untraced_verdict(r)} |")
    p2 = res["traced"]
    o += ["", "### Traced: ns per fire under bpftrace", "",
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
    for r in p2["rows"]:
        if "bpftrace_start_s" in r:
            s = r["bpftrace_start_s"]
            o.append(f"\nbpftrace start ({r['site']} site, count()): launch to traced program running "
                     f"(probes attached): min {s['min']:.2f} s, median {s['median']:.2f} s.")
    p3 = res["alternatives"]
    o += ["", "### What services do instead, per event", "",
          "| instead of a probe | events per run | min ns/event | median ns/event | vs fast-site count() fire (median) |",
          "|---|---:|---:|---:|---:|"]
    fired = by_site(res)
    fast_count = fired.get(("fast", "count"), {}).get("ns_per_fire", {}).get("median")
    untraced = fired.get(("standard", "untraced"), {}).get("ns_per_fire", {}).get("median")
    if untraced is not None:
        o.append(f"| a probe nobody traces (loop incl. guard) | {p2['fires_per_run']:,} | | {fmt(untraced, 2)} | |")
    for r in p3["rows"]:
        if "skipped" in r:
            o.append(f"| {r['label']} | {r['skipped']} | | | |")
            continue
        s = r["ns_per_event"]
        ratio = f"{s['median'] / fast_count:.2f}x" if fast_count else "-"
        o.append(f"| {r['label']} | {r['events_per_run']:,} | {fmt(s['min'], 2)} | {fmt(s['median'], 2)} | {ratio} |")
    o += [""] + billingd_bench.markdown(res["billingd"])
    ex = res.get("exporter")
    if ex is not None:
        o += ["### billing-exporter (bench/exporter_bench.py)", ""]
        o += [ex["markdown"], ""] if "markdown" in ex else [f"Not measured: {ex.get('skipped') or ex.get('error')}.", ""]
    st = res.get("stats")
    if st is not None:
        o += ["### stats: in-process counting, read without root (bench/stats_bench.py)", ""]
        o += [st["markdown"], ""] if "markdown" in st else [f"Not measured: {st.get('skipped') or st.get('error')}.", ""]
    rd = res.get("reading")
    if rd is not None:
        o += ["### Reading stats segments: /metrics against segment count (bench/reader_bench.py)", ""]
        o += [rd["markdown"], ""] if "markdown" in rd else [f"Not measured: {rd.get('skipped') or rd.get('error')}.", ""]
    return "\n".join(o) + "\n"


def summary_rows(res):
    """(what, result, target) for bench/README.md: the verdicts, one line each."""
    rows = []
    for r in res["untraced"]["rows"]:
        if "skipped" in r:
            rows.append((r["label"], r["skipped"], ""))
        else:
            rows.append((r["label"], f"{fmt(r.get('extra_per_site'), 3)} extra instructions per site",
                         untraced_verdict(r)))
    fired = by_site(res)
    ratios = res["traced"].get("fast_vs_standard", {})
    for prog in TRACED_PROGRAMS:
        std, fast = fired.get(("standard", prog)), fired.get(("fast", prog))
        if not std:
            skipped = next((r["skipped"] for r in res["traced"]["rows"] if r["script"] == prog and "skipped" in r),
                           "not run")
            rows.append((f"Traced, {prog}", skipped, ""))
            continue
        result = f"{std['ns_per_fire']['median']:.0f} ns per fire, standard 1-byte site"
        target = ""
        if fast:
            result += f"; {fast['ns_per_fire']['median']:.0f} ns fast 5-byte site ({ratios[prog]['median']:.2f}x)"
            target = f"fast <= 0.55x: {'met' if ratios[prog]['median'] <= 0.55 else 'MISSED'}"
        rows.append((f"Traced, {prog}", result, target))
    start = fired.get(("standard", "count"), {}).get("bpftrace_start_s")
    if start:
        rows.append(("bpftrace start (launch to probes attached)", f"{start['median']:.2f} s", ""))
    fast_count = fired.get(("fast", "count"), {}).get("ns_per_fire", {}).get("median")
    for r in res["alternatives"]["rows"]:
        if "skipped" in r:
            rows.append((f"Instead: {r['label']}", "not measured: " + r["skipped"], ""))
        else:
            med = r["ns_per_event"]["median"]
            vs = f" ({med / fast_count:.2f}x a fast-site fire)" if fast_count else ""
            rows.append((f"Instead: {r['label']}", f"{med:.1f} ns per event{vs}", ""))
    rows += billingd_bench.summary_rows(res["billingd"])
    for part, name in (("exporter", "billing-exporter"), ("stats", "stats")):
        ex = res.get(part)
        if ex is not None:
            if "json" in ex:
                rows += [tuple(r) for r in ex["json"].get("summary", [])]
            else:
                rows.append((name, "not measured: " + (ex.get("skipped") or ex.get("error")), ""))
    rd = res.get("reading")
    if rd is not None and "json" in rd:
        rows += [tuple(r) for r in rd["json"].get("summary", [])]
    return rows


FIGURES_BEGIN = "<!-- bench-figures: written by bench/run_bench.py --publish; do not edit by hand -->"
FIGURES_END = "<!-- /bench-figures -->"


def readme_figures(res):
    m = res["machine"]
    o = [FIGURES_BEGIN, "", "## Figures", "",
         f"Latest run, {res['date']}: Linux {m['kernel']}, {m['cpu']}, {m['cores']} cores "
         f"(load average {m['load_average_at_start']:.2f} at start), {m['compiler']}, {m['bpftrace']}. "
         "Every figure, with minima, maxima and runs: [results/latest.md](results/latest.md) "
         "([JSON](results/latest.json)). Misses are reported as misses.", "",
         "| What | Result | Target |", "|---|---|---|"]
    o += [f"| {what} | {result} | {target} |" for what, result, target in summary_rows(res)]
    return "\n".join(o + ["", FIGURES_END]) + "\n"


def publish_readme(path, res):
    """Replaces bench/README.md's figures section; the method text above
    the marker is kept as written."""
    text = open(path, encoding="utf-8").read()
    if FIGURES_BEGIN not in text or FIGURES_END not in text:
        raise RuntimeError(f"{path}: no figures markers ({FIGURES_BEGIN} ... {FIGURES_END})")
    head = text[:text.index(FIGURES_BEGIN)]
    tail = text[text.index(FIGURES_END) + len(FIGURES_END):].lstrip("\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + readme_figures(res) + (("\n" + tail) if tail else ""))


PARTS = ("untraced", "traced", "alternatives", "billingd", "exporter", "stats", "reading")


def publish_part(source_dir, update):
    """A part measured alone into SOURCE/bench/results/latest.json: update
    (a function) changes the loaded results in place; then latest.md,
    bench/README.md's figures and the docs' figures are written anew from
    them, as a full --publish run writes them."""
    path = os.path.join(source_dir, "bench", "results", "latest.json")
    with open(path) as f:
        res = json.load(f)
    update(res)
    with open(path, "w") as f:
        json.dump(res, f, indent=2)
    with open(os.path.join(source_dir, "bench", "results", "latest.md"), "w") as f:
        f.write(markdown(res, res["command"]))
    publish_readme(os.path.join(source_dir, "bench", "README.md"), res)
    subprocess.run([sys.executable, os.path.join(source_dir, "docs", "figures.py"), "--write"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="comma-separated parts to run, of " + ", ".join(PARTS) + " (default all)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of timed runs (default 5)")
    ap.add_argument("--quick", action="store_true", help="fewer events and runs: a smoke run, not figures")
    ap.add_argument("--publish", action="store_true",
                    help="also write SOURCE/bench/results/latest.{md,json} and SOURCE/bench/README.md's figures")
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    if not parts <= set(PARTS):
        print(f"run_bench.py: unknown part(s) {', '.join(sorted(parts - set(PARTS)))}; "
              f"parts are {', '.join(PARTS)}", file=sys.stderr)
        return 2
    if a.publish and (a.quick or parts != set(PARTS)):
        print("run_bench.py: --publish needs a full run (no --quick, every part)", file=sys.stderr)
        return 2
    build_dir, source_dir = os.path.abspath(a.build_dir), os.path.abspath(a.source_dir)
    bench_dir = os.path.join(build_dir, "bench")
    reps = 2 if a.quick else a.reps
    n_sites = 20000 if a.quick else 200000
    n_fire = 100000 if a.quick else 1000000
    skip = can_trace()
    command = "python3 bench/run_bench.py " + " ".join(sys.argv[1:])
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
           "command": command, "trace": skip or "ok", "quick": a.quick}
    print(f"billing-probes benchmark on {res['machine']['kernel']}, {res['machine']['cpu']}; "
          f"tracing: {skip or 'yes'}", flush=True)
    res["untraced"] = untraced_sites(bench_dir, n_sites) if "untraced" in parts else \
        {"iterations": 0, "sites_per_call": SITES, "rows": [], "perf_stat": "not run"}
    print("untraced sites done", flush=True)
    res["traced"] = traced_fires(bench_dir, n_fire, reps, skip) if "traced" in parts else \
        {"fires_per_run": 0, "repetitions": 0, "rows": []}
    print("traced fires done", flush=True)
    res["alternatives"] = alternatives(bench_dir, n_fire, reps) if "alternatives" in parts else {"rows": []}
    print("alternatives done", flush=True)
    res["billingd"] = billingd_bench.end_to_end(build_dir, source_dir, reps=1 if a.quick else 5,
                                                duration=3 if a.quick else 8, skip=skip) \
        if "billingd" in parts else {"rows": [], "skipped": "not run"}
    exporter = run_exporter(build_dir, source_dir, a.quick) if "exporter" in parts else None
    if exporter is not None:
        res["exporter"] = exporter
    stats = run_exporter(build_dir, source_dir, a.quick, "stats_bench.py") if "stats" in parts else None
    if stats is not None:
        res["stats"] = stats
    reading = run_exporter(build_dir, source_dir, a.quick, "reader_bench.py") if "reading" in parts else None
    if reading is not None:
        res["reading"] = reading
    md = markdown(res, command)
    print("\n" + md)
    outs = [(bench_dir, "results")]
    if a.publish:
        outs.append((os.path.join(source_dir, "bench", "results"), "latest"))
    for d, name in outs:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name + ".md"), "w") as f:
            f.write(md)
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(res, f, indent=2)
        print(f"wrote {os.path.join(d, name)}.md and .json")
    if a.publish:
        publish_readme(os.path.join(source_dir, "bench", "README.md"), res)
        print("wrote the figures of " + os.path.join(source_dir, "bench", "README.md"))
        # The docs' figures come from latest.json too (docs/figures.py).
        subprocess.run([sys.executable, os.path.join(source_dir, "docs", "figures.py"), "--write"])
    else:
        print("\n" + readme_figures(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())

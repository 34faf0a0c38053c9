#!/usr/bin/env python3
"""billing-probes benchmark: what a probe costs, beside what services do instead.

Run through meson (builds the programs first):
    meson compile -C BUILD bench          # or: meson test -C BUILD --benchmark
or directly, once built:
    python3 bench/run_bench.py --build-dir BUILD --source-dir . [--publish]
    python3 bench/run_bench.py --source-dir . --stamp FILE --as suite|fleet|distros

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
--publish also writes each part into SOURCE/bench/results/PART.json and
PART.md, one run each, stamped with its commit, CPU model, kernel and date
(refused while what a part measures has uncommitted changes), then the
figures written from them: the summary in SOURCE/bench/README.md and the
docs' figures (docs/write.py).  --stamp gives a results file another program wrote
(the fleet test's, a fresh clone's run-all-times.json, the distros suite's
results.json) its run header.
Traced rows need what
tests/lib/billingtest.py's why_no_tracing() asks for (root, bpftrace,
tracefs); without it they are reported as skipped, with the reason.
"""
import argparse
import copy
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
import stats_tables
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


def by_site(traced):
    return {(r["site"], r["script"]): r for r in traced["rows"] if "ns_per_fire" in r}


def untraced_markdown(p1):
    o = ["### Untraced probe sites: instructions (callgrind, exact)", "",
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
    return o


def traced_markdown(p2):
    o = ["### Traced: ns per fire under bpftrace", "",
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
    return o


def alternatives_markdown(p3, traced):
    """traced: the traced part of the same run (its fires are the yardstick), or None."""
    o = ["### What services do instead, per event", "",
         "| instead of a probe | events per run | min ns/event | median ns/event | vs fast-site count() fire (median) |",
         "|---|---:|---:|---:|---:|"]
    fired = by_site(traced) if traced else {}
    fast_count = fired.get(("fast", "count"), {}).get("ns_per_fire", {}).get("median")
    untraced = fired.get(("standard", "untraced"), {}).get("ns_per_fire", {}).get("median")
    if untraced is not None:
        o.append(f"| a probe nobody traces (loop incl. guard) | {traced['fires_per_run']:,} | | {fmt(untraced, 2)} | |")
    for r in p3["rows"]:
        if "skipped" in r:
            o.append(f"| {r['label']} | {r['skipped']} | | | |")
            continue
        s = r["ns_per_event"]
        ratio = f"{s['median'] / fast_count:.2f}x" if fast_count else "-"
        o.append(f"| {r['label']} | {r['events_per_run']:,} | {fmt(s['min'], 2)} | {fmt(s['median'], 2)} | {ratio} |")
    return o


def program_markdown(title, part):
    """A part a program of its own measured (exporter_bench.py, reader_bench.py): its table as it printed it."""
    return [title, ""] + ([part["markdown"]] if "markdown" in part
                          else [f"Not measured: {part.get('skipped') or part.get('error')}."])


def markdown(res, command):
    """A whole run, every figure: BUILD/bench/results.md, and the run's output."""
    m = res["machine"]
    o = ["## Benchmark results", "",
         f"Measured {res['date']} on Linux {m['kernel']}, {m['cpu']}, {m['cores']} cores "
         f"(load average {m['load_average_at_start']:.2f} at start), {m['compiler']}, {m['bpftrace']}; "
         f"build: -O2 -g (meson buildtype debugoptimized).", "", f"Command: `{command}`", ""]
    if res.get("quick"):
        o += ["**Smoke run (--quick): few events and runs; these are not figures.**", ""]
    o += untraced_markdown(res["untraced"]) + [""] + traced_markdown(res["traced"]) + [""]
    o += alternatives_markdown(res["alternatives"], res["traced"]) + [""] + billingd_bench.markdown(res["billingd"])
    for part, title in PROGRAM_TITLES.items():
        if res.get(part) is not None:
            o += program_markdown(title, res[part]) + [""]
    return "\n".join(o) + "\n"


PROGRAM_TITLES = {
    "exporter": "### billing-exporter (bench/exporter_bench.py)",
    "stats": "### stats: in-process counting, read without root (bench/stats_bench.py)",
    "reading": "### Reading stats segments: /metrics against segment count (bench/reader_bench.py)",
}


# --- results: each file in bench/results is one run -------------------------------
#
# A published part is bench/results/PART.json, {"run": HEADER, "data": DATA},
# and its table bench/results/PART.md, rendered from it.  HEADER stamps the
# run: the commit measured, the date, the CPU model, the kernel, the cores,
# the command, and "measures": the paths whose code its figures measure.  A
# commit to one of them after the run's makes every figure of the file stale:
# docs/write.py refuses a page that quotes it, and a file whose data holds
# another run (a date or a machine of its own inside) or lacks a stamp.  A
# full run writes every part it ran, each stamped with that run; a part
# measured alone (publish_part) writes its own files only.

RESULTS = os.path.join("bench", "results")
HEADER_FIELDS = ("commit", "date", "cpu", "kernel", "measures")
CORE = ["provider", "include/billing", "lib", "meson.build", "meson_options.txt"]
# What billing-exporter reads segments and processes with (its own folder's
# neighbours since main's 8c867c7): a part measuring the exporter measures them.
READERS = ["tools/stats-reader", "tools/probe-reader"]
# What each part's figures measure; the bench program that measured them
# is in its list too (a change of method makes them stale as well).
MEASURES = {
    "untraced": ["provider", "include/billing", "bench/sites_loop.c", "bench/meson.build", "bench/run_bench.py"],
    "traced": ["provider", "include/billing", "bench/fire_loop.c", "bench/firing.py", "bench/run_bench.py"],
    "alternatives": ["bench/alternatives.c", "bench/run_bench.py"],
    "billingd": CORE + ["examples/billingd", "examples/billing-load", "d-scripts/bpftrace", "bench/billingd_bench.py"],
    "exporter": CORE + READERS + ["tools/billing-exporter", "examples/billingd", "bench/fire_loop.c", "bench/exporter_bench.py"],
    "stats": CORE + READERS + ["bench/stats_loop.c", "bench/stats_bench.py", "tools/billing-exporter", "examples/billingd",
                               "tests/stats/stats_workload.c"],
    "stats-billingd-instructions": CORE + ["examples/billingd", "bench/billingd_bench.py", "bench/stats_bench.py"],
    "stats-trails": CORE + ["bench/stats_loop.c", "bench/stats_bench.py"],
    "stats-native": CORE + ["bench/stats_loop.c", "bench/stats_bench.py"],
    "reading": CORE + READERS + ["tools/billing-exporter", "tests/stats/stats_workload.c", "bench/reader_bench.py"],
    # Written by others and stamped here (stamp_file): the suite's times
    # measure the tests; the fleet test's figures the exporter and the
    # recipe; the distros suite's outcomes what it builds and runs in each
    # release's root (the kit, the scripts through trace, the exporter, the
    # rules and alerts) and how.
    "suite": ["tests", "meson.build", "meson_options.txt"],
    "fleet": CORE + READERS + ["tools/billing-exporter", "examples/billingd", "deploy/fleet", "tests/fleet"],
    "distros": CORE + ["tools", "d-scripts/bpftrace", "monitoring", "tests/distros", "tests/install-deps.sh",
                       "tests/userpath", "tests/scripts"],
}
# Parts of the stats part measured, and published, apart: their key in the
# stats part's JSON.
STATS_APART = {"stats-billingd-instructions": ("billingd", "instructions"), "stats-trails": ("trails",),
               "stats-native": ("native",)}
# The parts in the order of the tables.
PUBLISHED = ("untraced", "traced", "alternatives", "billingd", "exporter", "stats") + tuple(STATS_APART) + ("reading",)
MACHINE_KEYS = ("cpu", "kernel", "cores", "compiler", "bpftrace", "load_average_at_start")


def git(source_dir, *args):
    r = subprocess.run(["git", "-C", source_dir, *args], capture_output=True, text=True)
    return r.stdout.rstrip() if r.returncode == 0 else None


def stamp(source_dir, part, command, date=None, machine_info=None):
    """The run header of a part measured now (or at date) on this
    machine, at this commit.  Refuses when what the part measures has
    uncommitted changes: the stamp would name code that was not measured."""
    measures = MEASURES[part]
    commit = git(source_dir, "rev-parse", "--short=12", "HEAD")
    if commit is None:
        raise RuntimeError(f"{source_dir} is not a git checkout: a published run is stamped with its commit")
    dirty = git(source_dir, "status", "--porcelain", "--", *measures)
    if dirty:
        paths = sorted(set(line[3:] for line in dirty.splitlines()))
        raise RuntimeError(f"{part}: uncommitted changes to what it measures ({', '.join(paths)}): "
                           "commit them first, so the run's stamp names the code it measured")
    m = machine_info or machine()
    header = {"commit": commit, "date": date or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    header.update({k: m[k] for k in MACHINE_KEYS if k in m})
    return dict(header, command=command, measures=measures)


def run_line(run):
    """One line naming a run, for the tables."""
    def said(k):
        return run.get(k) or f"{k} not recorded"
    return (f"{run.get('date') or 'date not recorded'}, commit {said('commit')}, {said('cpu')}, "
            f"Linux {said('kernel')}, " + (f"{run['cores']} cores" if run.get("cores") else "cores not recorded"))


def results_path(source_dir, part, ext="json"):
    return os.path.join(source_dir, RESULTS, f"{part}.{ext}")


def lift_run(data):
    """(data without its own date and machine, that date, that machine):
    what a bench program wrote inside its part belongs in the run's header."""
    if not isinstance(data, dict):
        return data, None, None
    inner = data.get("json") if isinstance(data.get("json"), dict) else data
    date, mach = inner.get("date"), inner.get("machine")
    if date is None and mach is None:
        return data, None, None
    data = copy.deepcopy(data)
    inner = data.get("json") if isinstance(data.get("json"), dict) else data
    inner.pop("date", None)
    inner.pop("machine", None)
    return data, date, mach


def load_runs(source_dir):
    """{part: {"run": header, "data": data}} of the published parts."""
    runs = {}
    for part in PUBLISHED:
        path = results_path(source_dir, part)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                runs[part] = json.load(f)
    return runs


def stats_view(runs):
    """The stats part as stats_bench.py wrote it: its own run's JSON with
    the parts measured apart put back; None without one."""
    if "stats" not in runs:
        return None
    st = copy.deepcopy(runs["stats"]["data"])
    if "json" not in st:
        return st
    st["json"]["date"] = runs["stats"]["run"]["date"]
    for part, key in STATS_APART.items():
        if part in runs:
            at = st["json"]
            for k in key[:-1]:
                at = at.setdefault(k, {})
            at[key[-1]] = dict(runs[part]["data"], date=runs[part]["run"]["date"])
    return st


def view(runs):
    """The published parts as one result, in the shape a run has
    (res[part]): what publish_part's update functions change."""
    res = {part: copy.deepcopy(r["data"]) for part, r in runs.items()
           if part in ("untraced", "traced", "alternatives", "billingd", "exporter")}
    if "stats" in runs:
        res["stats"] = stats_view(runs)
    if "reading" in runs:
        res["reading"] = copy.deepcopy(runs["reading"]["data"])
        if "json" in res["reading"]:
            run = runs["reading"]["run"]
            res["reading"]["json"].update(date=run["date"], machine={k: run[k] for k in MACHINE_KEYS if k in run})
    return res


def split(res):
    """{part: data} of a result in a run's shape, the stats part's pieces
    measured apart in their own parts; derived text (the stats part's
    table and summary, rendered again from the data) left out."""
    parts = {p: res[p] for p in ("untraced", "traced", "alternatives", "billingd", "exporter", "reading")
             if res.get(p) is not None}
    st = res.get("stats")
    if st is not None:
        st = copy.deepcopy(st)
        st.pop("markdown", None)
        js = st.get("json")
        if js is not None:
            js.pop("summary", None)
            for part, key in STATS_APART.items():
                at = js
                for k in key[:-1]:
                    at = at.get(k, {})
                if key[-1] in at:
                    parts[part] = at.pop(key[-1])
        parts["stats"] = st
    return parts


def write_run(source_dir, part, header, data):
    data, date, mach = lift_run(data)
    header = dict(header)
    if date:  # when the part itself was measured, within its run
        header["date"] = date
    if mach:
        header.update({k: mach[k] for k in MACHINE_KEYS if k in mach})
    with open(results_path(source_dir, part), "w", encoding="utf-8") as f:
        json.dump({"run": header, "data": data}, f, indent=1)
        f.write("\n")


# --- what is rendered from the results files ----------------------------------------

def part_body(part, runs):
    """The table(s) of one published part, from its file."""
    data = runs[part]["data"]
    if part == "untraced":
        return untraced_markdown(data)
    if part == "traced":
        return traced_markdown(data)
    if part == "alternatives":  # the fire it is compared with, only from the same run
        traced = runs.get("traced")
        same = traced and traced["run"] == dict(runs[part]["run"], measures=traced["run"]["measures"])
        return alternatives_markdown(data, traced["data"] if same else None)
    if part == "billingd":
        return billingd_bench.markdown(data)
    if part in ("exporter", "reading"):
        return program_markdown(PROGRAM_TITLES[part], data)
    if part == "stats":
        st = copy.deepcopy(data)
        if "json" not in st:
            return program_markdown(PROGRAM_TITLES["stats"], st)
        js = dict(st["json"], date=runs[part]["run"]["date"])
        js.setdefault("billingd", {}).setdefault("instructions", {"apart": "stats-billingd-instructions"})
        return [PROGRAM_TITLES["stats"], "", stats_tables.markdown(js)]
    if part == "stats-billingd-instructions":
        return ["### billingd's instructions per request (bench/stats_bench.py --billingd-instructions)", ""] + \
            billingd_bench.instructions_markdown(dict(data, date=runs[part]["run"]["date"]))
    if part == "stats-trails":
        return ["### Slow-request trails (bench/stats_bench.py --trails)", ""] + stats_tables.trails_markdown(data)
    return ["### Native buckets (bench/stats_bench.py --native)", ""] + stats_tables.native_markdown(data)


def part_markdown(part, runs):
    """bench/results/PART.md: the run, then its table(s)."""
    run = runs[part]["run"]
    return "\n".join([f"## {part}: one run", "",
                      f"Run: {run_line(run)}.", "", f"Command: `{run.get('command') or 'not recorded'}`", "",
                      "Measures (a later commit to any of these makes these figures stale): "
                      + ", ".join(f"`{p}`" for p in run.get("measures") or ["not recorded"]) + ".", ""]
                     + part_body(part, runs)).rstrip("\n") + "\n"


def part_rows(part, runs):
    """(what, result, target) rows of bench/README.md's summary from one part."""
    data = runs[part]["data"]
    rows = []
    if part == "untraced":
        for r in data["rows"]:
            rows.append((r["label"], r["skipped"], "") if "skipped" in r else
                        (r["label"], f"{fmt(r.get('extra_per_site'), 3)} extra instructions per site",
                         untraced_verdict(r)))
    elif part == "traced":
        fired, ratios = by_site(data), data.get("fast_vs_standard", {})
        for prog in TRACED_PROGRAMS:
            std, fast = fired.get(("standard", prog)), fired.get(("fast", prog))
            if not std:
                skipped = next((r["skipped"] for r in data["rows"] if r["script"] == prog and "skipped" in r),
                               "not run")
                rows.append((f"Traced, {prog}", skipped, ""))
                continue
            result, target = f"{std['ns_per_fire']['median']:.0f} ns per fire, standard 1-byte site", ""
            if fast:
                result += f"; {fast['ns_per_fire']['median']:.0f} ns fast 5-byte site ({ratios[prog]['median']:.2f}x)"
                target = f"fast <= 0.55x: {'met' if ratios[prog]['median'] <= 0.55 else 'MISSED'}"
            rows.append((f"Traced, {prog}", result, target))
        start = fired.get(("standard", "count"), {}).get("bpftrace_start_s")
        if start:
            rows.append(("bpftrace start (launch to probes attached)", f"{start['median']:.2f} s", ""))
    elif part == "alternatives":
        for r in data["rows"]:
            rows.append((f"Instead: {r['label']}", "not measured: " + r["skipped"], "") if "skipped" in r else
                        (f"Instead: {r['label']}", f"{r['ns_per_event']['median']:.1f} ns per event", ""))
    elif part == "billingd":
        rows += billingd_bench.summary_rows(data)
    elif part in ("exporter", "reading"):
        if "json" in data:
            rows += [tuple(r) for r in data["json"].get("summary", [])]
        else:
            rows.append((f"{part}", "not measured: " + (data.get("skipped") or data.get("error")), ""))
    else:
        if part == "stats" and "json" not in data:
            return [("stats", "not measured: " + (data.get("skipped") or data.get("error")), "")]
        js = {"per_event": []}
        if part == "stats":
            js = data["json"]
        elif part == "stats-trails":
            js["trails"] = data
        elif part == "stats-billingd-instructions":
            js["billingd"] = {"instructions": data}
        rows += [tuple(r) for r in stats_tables.summary(js)]
    return rows


def readme_figures(runs):
    """bench/README.md's summary (its `gen:bench-figures` block, docs/write.py):
    each row with the run it comes from."""
    by_run = {}
    for part in PUBLISHED:
        if part in runs:
            by_run.setdefault(run_line(runs[part]["run"]), []).append(part)
    o = ["", "## Figures", "",
         "Each figure comes from one run, named beside it; every figure of a part, with minima, maxima and "
         "runs, is in its file in [results/](results/) (PART.md, and PART.json that it is written from). "
         "Misses are reported as misses. The runs:", ""]
    o += [f"- {line}: " + ", ".join(f"[{p}](results/{p}.md)" for p in parts) for line, parts in by_run.items()]
    o += ["", "| What | Result | Target | Run |", "|---|---|---|---|"]
    for part in PUBLISHED:
        if part in runs:
            when = (runs[part]["run"].get("date") or "undated")[:10]
            o += [f"| {what} | {result} | {target} | [{when}](results/{part}.md) |"
                  for what, result, target in part_rows(part, runs)]
    return "\n".join(o + [""]) + "\n"


def rendered(source_dir):
    """{path relative to the source: text} of each PART.md, written whole
    from its results file."""
    runs = load_runs(source_dir)
    return {os.path.join(RESULTS, f"{part}.md"): part_markdown(part, runs) for part in runs}


def write_rendered(source_dir):
    """Each PART.md, then every figure written from the results files
    (docs/write.py: bench/README.md's summary, the docs' figures)."""
    for rel, text in rendered(source_dir).items():
        with open(os.path.join(source_dir, rel), "w", encoding="utf-8") as f:
            f.write(text)
    subprocess.run([sys.executable, os.path.join(source_dir, "docs", "write.py"), "--write",
                    "--only", "fig,bench-figures"], check=False)


def publish_run(source_dir, res, command):
    """A full run: every part it measured into its own file, stamped with
    the run (the date each part measured itself at, when it says)."""
    m = res["machine"]
    headers = {part: stamp(source_dir, part, command, res["date"], m) for part in PUBLISHED}
    for part, data in split(res).items():
        write_run(source_dir, part, headers[part], data)
    write_rendered(source_dir)


def publish_part(source_dir, update):
    """A part measured alone (stats_bench.py --billingd-instructions,
    --trails, --native; reader_bench.py --publish): update(res) changes the
    published results, in a run's shape, in place; each part it changed is
    written anew as a run of its own, stamped now; then everything
    rendered from them."""
    runs = load_runs(source_dir)
    res = view(runs)
    before = split(copy.deepcopy(res))
    update(res)
    after = split(res)
    changed = [p for p in after if json.dumps(after[p], sort_keys=True) != json.dumps(before.get(p), sort_keys=True)]
    command = "python3 " + " ".join([os.path.relpath(sys.argv[0], source_dir)] + sys.argv[1:])
    for part in changed:
        write_run(source_dir, part, stamp(source_dir, part, command), after[part])
        print(f"wrote {results_path(source_dir, part)}")
    write_rendered(source_dir)


def stamp_file(source_dir, path, part):
    """A results file another program wrote (tests/fleet's FLEET_RESULTS, a
    copy of tests/run-all.sh's run-all-times.json or of tests/distros'
    results.json), given its run header: its own date is kept, and its own
    commit, kernel and cores where it recorded them (the run's, which may
    be older than this checkout's HEAD); the rest (CPU model, measured
    paths) is now's, so stamp it on the machine that ran it."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if "run" in data:
        raise RuntimeError(f"{path} is stamped already")
    date, commit = data.pop("date", None), data.pop("commit", None)
    own = {k: data.pop(k) for k in ("kernel", "cores") if k in data}
    command = data.pop("command", None) or "not recorded"
    if own.get("kernel") not in (None, platform.release()):
        raise RuntimeError(f"{path}: run on Linux {own['kernel']}, this machine runs {platform.release()}: "
                           "its CPU model cannot be told here; stamp it on the machine that ran it")
    if commit:  # the run's commit, not HEAD's: the stamp names the code that ran
        full = git(source_dir, "rev-parse", "--verify", "--quiet", "--short=12", commit + "^{commit}")
        if full is None:
            raise RuntimeError(f"{path}: its commit {commit} is not in {source_dir}: the run cannot be stamped")
        m = machine()
        header = {"commit": full, "date": date or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        header.update({k: m[k] for k in MACHINE_KEYS if k in m})
        header = dict(header, command=command, measures=MEASURES[part])
    else:
        header = stamp(source_dir, part, command, date)
    header.update(own)
    header.pop("load_average_at_start", None)  # now's, not the run's
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"run": header, "data": data}, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir")
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="comma-separated parts to run, of " + ", ".join(PARTS) + " (default all)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of timed runs (default 5)")
    ap.add_argument("--quick", action="store_true", help="fewer events and runs: a smoke run, not figures")
    ap.add_argument("--publish", action="store_true",
                    help="also write each part into SOURCE/bench/results (PART.json, PART.md, stamped with this "
                         "run) and the figures written from them")
    ap.add_argument("--stamp", metavar="FILE",
                    help="no run: give FILE, a results file another program wrote, its run header (with --as)")
    ap.add_argument("--as", dest="as_part", choices=("suite", "fleet", "distros"), help="what the --stamp file measures")
    a = ap.parse_args()
    source_dir = os.path.abspath(a.source_dir)
    if a.stamp:
        if not a.as_part:
            ap.error("--stamp needs --as")
        stamp_file(source_dir, a.stamp, a.as_part)
        return 0
    if not a.build_dir:
        ap.error("--build-dir is required")
    parts = set(a.parts.split(","))
    if not parts <= set(PARTS):
        print(f"run_bench.py: unknown part(s) {', '.join(sorted(parts - set(PARTS)))}; "
              f"parts are {', '.join(PARTS)}", file=sys.stderr)
        return 2
    if a.publish and (a.quick or parts != set(PARTS)):
        print("run_bench.py: --publish needs a full run (no --quick, every part)", file=sys.stderr)
        return 2
    build_dir = os.path.abspath(a.build_dir)
    bench_dir = os.path.join(build_dir, "bench")
    command = "python3 bench/run_bench.py " + " ".join(sys.argv[1:])
    if a.publish:  # before the run, not after an hour of it
        for part in PUBLISHED:
            stamp(source_dir, part, command)
    reps = 2 if a.quick else a.reps
    n_sites = 20000 if a.quick else 200000
    n_fire = 100000 if a.quick else 1000000
    skip = can_trace()
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
    for part, name in (("exporter", "exporter_bench.py"), ("stats", "stats_bench.py"), ("reading", "reader_bench.py")):
        got = run_exporter(build_dir, source_dir, a.quick, name) if part in parts else None
        if got is not None:
            res[part] = got
    md = markdown(res, command)
    print("\n" + md)
    os.makedirs(bench_dir, exist_ok=True)
    with open(os.path.join(bench_dir, "results.md"), "w") as f:
        f.write(md)
    with open(os.path.join(bench_dir, "results.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(f"wrote {os.path.join(bench_dir, 'results')}.md and .json")
    if a.publish:
        publish_run(source_dir, res, command)
        print("wrote each part into " + os.path.join(source_dir, RESULTS) + ", and the figures written from them")
    return 0


PARTS = ("untraced", "traced", "alternatives", "billingd", "exporter", "stats", "reading")


if __name__ == "__main__":
    sys.exit(main())

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
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import billingd_bench
from bench_tables import PROGRAM_TITLES, SITES, alternatives_markdown, program_markdown, traced_markdown, \
    untraced_markdown
from firing import TRACED_PROGRAMS, fire_once, optimized_fires, run, summary
# The results files, and their API for docs/, tests/time_suite.py and the
# bench programs that import it from here.
from published import (HEADER_FIELDS, MACHINE_KEYS, PUBLISHED, RESULTS, git, load_runs, machine,  # noqa: F401
                       part_body, publish_part, publish_run, readme_figures, rendered, results_path, run_line,
                       stamp, stamp_file)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import billingtest as bt  # noqa: E402

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

"""The published bench results (bench/results): each file one run, stamped
with its commit, machine and date; what is rendered from them (each
PART.md, bench/README.md's summary through docs/write.py); and publishing
a run or a part measured alone.  Shared by run_bench.py (a whole run) and
the bench programs that publish a part of their own (stats_bench.py,
reader_bench.py), so neither imports the other.

A published part is bench/results/PART.json, {"run": HEADER, "data": DATA},
and its table bench/results/PART.md, rendered from it.  HEADER stamps the
run: the commit measured, the date, the CPU model, the kernel, the cores,
the command, and "measures": the paths whose code its figures measure.  A
commit to one of them after the run's makes every figure of the file stale:
docs/write.py refuses a page that quotes it, and a file whose data holds
another run (a date or a machine of its own inside) or lacks a stamp.  A
full run writes every part it ran, each stamped with that run; a part
measured alone (publish_part) writes its own files only.
"""
import copy
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import billingd_bench
import stats_tables
from bench_tables import (PROGRAM_TITLES, alternatives_markdown, by_site, fmt, program_markdown,
                          traced_markdown, untraced_markdown, untraced_verdict)
from firing import TRACED_PROGRAMS, run

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

"""The bench run's tables (bench/run_bench.py's parts as Markdown): shared
by run_bench.py, which prints a run with them, and published.py, which
renders the published results files with them.
"""
SITES = 8  # probe sites in sites_loop.c's handle()


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


PROGRAM_TITLES = {
    "exporter": "### billing-exporter (bench/exporter_bench.py)",
    "stats": "### stats: in-process counting, read without root (bench/stats_bench.py)",
    "reading": "### Reading stats segments: /metrics against segment count (bench/reader_bench.py)",
}

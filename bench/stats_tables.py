"""The stats part's tables and summary rows (bench/stats_bench.py's figures
written out): shared by stats_bench.py, which prints them, and
run_bench.py, which renders the published results files from them, so
neither program imports the other's tables.
"""
import statistics

import billingd_bench

# stats_bench.py's targets that its tables judge against.
TARGETS = {"scaling": 0.9, "scrape_ms": 5.0, "billingd_pct": 1.0, "trail_ratio": 2.0}


def native_markdown(t):
    parts = [f"{p} {r['instructions_on']:.0f} instructions and {r['ns_on']:.1f} ns per event with them, "
             f"{r['instructions_off']:.0f} and {r['ns_off']:.1f} without ({r['quantities']} native "
             f"quantit{'y' if r['quantities'] == 1 else 'ies'}: {r['instructions_per_quantity']:.0f} instructions, "
             f"{r['ns_per_quantity']:.1f} ns each)" for p, r in t.items() if isinstance(r, dict)]
    return ["Native buckets (BILLING_STATS_NATIVE=off turns them off; trails off in both): " + "; ".join(parts)
            + ": per quantity the bucket's index (a table row by the leading one's bit, a cell by the bits below it, "
            "one compare) and one atomic add."]


def trails_markdown(t):
    r, q, m = t["in_request"], t["no_request"], t.get("machine_ns", {})
    said = ", ".join(f"{'rdtsc' if k == 'rdtsc' else 'an atomic add'} {v:.1f} ns" for k, v in sorted(m.items()))
    return [f"Slow-request trails: payment-auth inside requests of 30 costs {r['instructions_on']:.0f} instructions "
            f"and {r['ns_on']:.1f} ns per event with the trails on, {r['instructions_off']:.0f} and {r['ns_off']:.1f} "
            f"with them off (BILLING_STATS_SLOW=off; request-start and -done's trail work is in it): the trail costs "
            f"{r['trail_instructions']:.0f} instructions per probe, {r['instructions_ratio']:.2f}x a plain stats "
            f"event ({r['stats_event_instructions']:.0f}; target <= {t['target']['ratio']:g}x: "
            f"{'met' if t['target']['met'] else 'MISSED'}), and {r['trail_ns']:.1f} ns, {r['ns_ratio']:.2f}x the "
            f"stats event's time in this loop, mostly the event's timestamp and its one atomic add"
            + (f" ({said} on this machine)" if said else "") + ".  Outside any request: "
            f"{q['instructions_on']:.0f} instructions on, {q['instructions_off']:.0f} off."]


def markdown(res):
    o = [f"Measured {res['date']}, {res['cores']} cores (load average {res['load_average']:.2f} at start); "
         "ns: the firing thread's CPU time per event, median (min..max) of the runs, every configuration "
         "interleaved in each run; instructions: callgrind, per event, the whole iteration of the loop that "
         "fires (computing the arguments included) less the same loop with the probes compiled out ("
         + ", ".join(sorted({f"{r['loop_instructions']:.0f}" for r in res["per_event"] if "loop_instructions" in r}))
         + ": the compiler drops a loop that does nothing).", "",
         "| stats-fed probe | stats on, ns/event | vs the shared atomic, same run | instructions | "
         "stats build, BILLING_STATS=off | USDT-only build, untraced | target |",
         "|---|---:|---:|---:|---:|---:|---|"]
    atomic = next((r["stats"]["median"] for r in res["per_event"] if r["probe"] == "atomic" and "stats" in r), None)

    def cell(r, k):
        return f"{r[k]['median']:.1f} ({r[k]['min']:.1f}..{r[k]['max']:.1f})" if k in r else "-"

    def ir(r, k):
        return f"{r[k]['instructions']:.0f}" if k in r and r[k].get("instructions") is not None else "-"
    for r in res["per_event"]:
        name = {"atomic": "relaxed atomic add (one counter)", "own": "add to the thread's own counter"}.get(r["probe"],
                                                                                                            r["probe"])
        t = r.get("target")
        target = f"<= {t['ns']:g} ns, <= {t['instructions']} instructions: {'met' if t['met'] else 'MISSED'}" if t else ""
        ratio = f"{r['stats']['median'] / atomic:.2f}x" if atomic and "stats" in r else "-"
        o.append(f"| {name} | {cell(r, 'stats')} | {ratio} | {ir(r, 'stats')} | {cell(r, 'stats off')} / "
                 f"{ir(r, 'stats off')} | {cell(r, 'usdt')} / {ir(r, 'usdt')} | {target} |")
    own = next((r["stats"]["median"] for r in res["per_event"] if r["probe"] == "own" and "stats" in r), None)
    if atomic and own:
        o += ["", f"A native bucket is counted with one lock-prefixed add (its row's buckets are shared by the "
              f"process's threads): {atomic:.2f} ns here, against {own:.2f} ns for an add to a thread's own counter "
              f"(a thread slot's cell), {atomic / own:.1f}x, measured in the same run."]
    s = res["scaling"]
    for probe in ("payment-auth", "atomic"):
        p = s[probe]
        o += ["", f"Scaling, {'a shared relaxed atomic' if probe == 'atomic' else probe}: CPU per event "
              f"{p['one_thread_ns']:.1f} ns at one thread, {p['eight_threads_ns']:.1f} ns at 8 threads on "
              f"{s['cores']} cores: events per second per core {p['ratio']:.2f}x of one thread"
              + (f" (target >= {TARGETS['scaling']})" if probe != "atomic" else "")
              + f"; wall clock {p['one_thread_eps_wall'] / 1e6:.1f} vs {p['eight_threads_eps_wall_per_core'] / 1e6:.1f}"
              " M events/s per core (other processes share these cores)."]
    sc = res["scrape"]
    if "skipped" not in sc:
        o += ["", f"/metrics from stats: {sc['series']} series, median {sc['scrape_ms_median']:.2f} ms over HTTP "
              f"(max {sc['scrape_ms_max']:.2f}; target <= {TARGETS['scrape_ms']} ms).  Segment: "
              f"{sc['fixed_bytes']:,} bytes fixed + {sc['slot_bytes']:,} per thread slot; "
              f"{sc['bytes_64_threads']:,} bytes for 64 threads (+ the overflow slot), sparse on tmpfs: "
              "only pages a thread writes are allocated."]
    if "trails" in res:
        o += [""] + trails_markdown(res["trails"])
    if "native" in res:
        o += [""] + native_markdown(res["native"])
    b = res["billingd"]
    if "skipped" not in b:
        o += [""] + billingd_bench.instructions_markdown(b["instructions"])
        med = statistics.median(b["rps"]["compiled out"])
        o += ["", f"billingd at saturation, stats on vs probes compiled out ({b['repetitions']} paired runs of "
              f"{b['duration_s']} s, compiled out median {med:.0f} req/s): {b['median_pct']:+.1f} % "
              f"(spread {b['spread_pct'][0]:+.1f} .. {b['spread_pct'][1]:+.1f} %): throughput on this shared "
              "machine, the instructions above are the figure."]
    return "\n".join(o)


def summary(res):
    """[what, result, target] rows for bench/README.md's summary."""
    rows = []
    for r in res["per_event"]:
        t = r.get("target")
        if t and "stats" in r:
            rows.append([f"stats, {r['probe']} per event (one thread)",
                         f"{r['stats']['median']:.1f} ns, {r['stats']['instructions']:.0f} instructions",
                         f"<= {t['ns']:g} ns, <= {t['instructions']} instructions: {'met' if t['met'] else 'MISSED'}"])
    t = res.get("trails")
    if t:
        r = t["in_request"]
        rows.append(["slow-request trails, a probe inside a request, against a plain stats event",
                     f"{r['trail_instructions']:.0f} instructions, {r['instructions_ratio']:.2f}x "
                     f"({r['stats_event_instructions']:.0f}); {r['trail_ns']:.1f} ns, {r['ns_ratio']:.2f}x",
                     f"<= {t['target']['ratio']:g}x: {'met' if t['target']['met'] else 'MISSED'}"])
    ins = res.get("billingd", {}).get("instructions", {})
    rows_by = {r["config"]: r for r in ins.get("rows", []) if "skipped" not in r}
    st, out = rows_by.get("stats (billingd-stats)"), next((r for c, r in rows_by.items() if c.startswith("compiled out")), None)
    if st and out:
        pct = st["vs_compiled_out_pct"]
        rows.append(["billingd with stats, instructions per request (callgrind, fixed schedule)",
                     f"{pct:+.2f} % over compiled out ({st['instructions_per_request']:,.0f} vs "
                     f"{out['instructions_per_request']:,.0f}); clock reads {st['clock_reads_per_request']:.1f} vs "
                     f"{out['clock_reads_per_request']:.1f} per request",
                     f"<= {TARGETS['billingd_pct']:g} %: {'met' if pct <= TARGETS['billingd_pct'] else 'MISSED'}"])
    return rows

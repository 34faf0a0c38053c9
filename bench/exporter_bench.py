#!/usr/bin/env python3
"""billing-exporter's benchmark: what the always-on exporter costs.

  exporter_bench.py --build-dir BUILD --source-dir SOURCE [--quick] [--reps N]

1. ns per fire of the exporter's payment-auth program (a per-CPU hash map
   keyed by gateway, currency and result, with amount and duration
   histograms) against bpftrace count() and the biz_metrics-like
   aggregation run_bench.py measures, on the standard 1-byte and the fast
   5-byte site (bench/fire_loop.c; traced minus untraced, interleaved).
2. /metrics scrape time with every probe's label sets populated (billingd
   under billing-load, --metrics all): median of 50 scrapes, and the
   series count.
3. billingd's saturated throughput, traced by the exporter (the default
   groups, and all groups) against the same build compiled out, paired
   per repetition; on the fast site too when a -Dprobe_site=fast nested
   build can be made.

Prints a Markdown table, then one JSON object (run_bench.py reads both).
Exit 77 with the reason on the last line when it cannot trace here.
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
import billingtest as bt  # noqa: E402
import billingd_bench  # noqa: E402
from firing import TRACED_PROGRAMS, fire_once, summary  # noqa: E402

TARGETS = {"count_ratio": 1.3, "scrape_ms": 5.0, "default_standard_pct": 5.0, "default_fast_pct": 3.0}


class Exporter:
    """billing-exporter on a free port, ready once it prints its URL."""

    def __init__(self, exe, *args):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([exe, *args, "--listen", "127.0.0.1:0"], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            self.log.seek(0)
            text = self.log.read()
            m = re.search(r"serving (http://127\.0\.0\.1:\d+)/metrics", text)
            if m:
                self.url = m.group(1)
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("billing-exporter did not start: " + text[-300:])
            time.sleep(0.05)

    def scrape(self, accept=None):
        """/metrics: text, or what the Accept header asks for."""
        req = urllib.request.Request(self.url + "/metrics", headers={"Accept": accept} if accept else {})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    def stop(self):
        bt.stop_process(self.proc)


def per_fire(build, exe, n, reps):
    """ns per fire above the untraced loop: exporter vs bpftrace, per site."""
    rows = []
    for site in ("standard", "fast"):
        binary = os.path.join(build, "bench", "fire_" + site)
        if not os.path.exists(binary):
            continue
        untraced, traced = [], {name: [] for name in ["exporter"] + list(TRACED_PROGRAMS)}
        for _ in range(reps):
            untraced.append(fire_once(binary, n)[0])
            for name, script in TRACED_PROGRAMS.items():
                traced[name].append(fire_once(binary, n, script)[0])
            ex = Exporter(exe, "--binary", binary)
            try:
                r = subprocess.run([binary, str(n)], capture_output=True, text=True, timeout=300)
                m = re.search(r"traced=1 fires=\d+ ns_per_fire=([\d.]+)", r.stdout)
                if not m:
                    raise RuntimeError("fire_loop under the exporter: " + r.stdout[-200:])
                traced["exporter"].append(float(m.group(1)))
                counted = sum(float(v) for k, v in re.findall(r"^(billing_payments_total\{[^}]*\}) (\S+)$",
                                                              ex.scrape().decode(), re.M))
            finally:
                ex.stop()
        base = statistics.median(untraced)
        row = {"site": site, "untraced_ns": summary(untraced), "fires_per_run": n,
               "exporter_counted_last_run": counted}
        for name, values in traced.items():
            row[name] = summary([v - base for v in values])
        row["exporter_vs_count"] = row["exporter"]["median"] / row["count"]["median"]
        row["exporter_vs_biz"] = row["exporter"]["median"] / row["biz_metrics-like"]["median"]
        rows.append(row)
    return rows


def start_billingd(billingd, workdir):
    port = billingd_bench.free_port()
    out = open(os.path.join(workdir, "billingd-%d.out" % port), "w")
    proc = subprocess.Popen([billingd, "--port", str(port), "--gateway-latency-ms", "0",
                             "--db", os.path.join(workdir, "bench-%d.db" % port)],
                            stdout=out, stderr=subprocess.STDOUT)
    billingd_bench.wait_healthy(port, proc)
    return proc, port


def scrape_time(build, exe, workdir):
    billingd = os.path.join(build, "examples", "billingd", "billingd")
    load = os.path.join(build, "examples", "billing-load", "billing-load")
    proc, port = start_billingd(billingd, workdir)
    ex = None
    try:
        ex = Exporter(exe, "--pid", str(proc.pid), "--metrics", "all")
        billingd_bench.billing_load_runner(load)(port, 3, 8)
        times = []
        for _ in range(50):
            t0 = time.perf_counter()
            body = ex.scrape()
            times.append((time.perf_counter() - t0) * 1e3)
        series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
        own = re.search(rb"^billing_exporter_scrape_duration_seconds (\S+)$", body, re.M)
        return {"series": series, "scrape_ms": summary(times),
                "exporter_reported_ms": float(own.group(1)) * 1e3 if own else None}
    finally:
        if ex:
            ex.stop()
        bt.stop_process(proc)


def fast_billingd(build, source):
    """billingd with 5-byte nop sites."""
    return billingd_bench.nested_billingd(build, source, "build-fast",
                                          ["-Dprobe_site=fast", "-Dexporter=disabled", "-Dtool=disabled"])


def throughput(build, source, exe, reps, duration, sites):
    """billingd at saturation: compiled out vs traced by the exporter, paired."""
    load = billingd_bench.billing_load_runner(os.path.join(build, "examples", "billing-load", "billing-load"))
    out = {"duration_s": duration, "repetitions": reps, "sites": {}}
    binaries = {"standard": os.path.join(build, "examples", "billingd", "billingd")}
    if "fast" in sites:
        try:
            binaries["fast"] = fast_billingd(build, source)
        except RuntimeError as e:
            out["sites"]["fast"] = {"skipped": str(e)}
    compiled_out = billingd_bench.noprobes_billingd(build, source)
    configs = [("compiled out", compiled_out, None)]
    for site, binary in binaries.items():
        configs += [("%s: untraced" % site, binary, None),
                    ("%s: exporter default (business,requests)" % site, binary, []),
                    ("%s: exporter all groups" % site, binary, ["--metrics", "all"])]
    samples = {c[0]: [] for c in configs}
    workdir = tempfile.mkdtemp(prefix="billing-exbench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        for rep in range(reps):
            for label, binary, args in configs:
                proc, port = start_billingd(binary, workdir)
                ex = None
                try:
                    if args is not None:
                        ex = Exporter(exe, "--pid", str(proc.pid), *args)
                    rps, _ = load(port, duration, 16)
                finally:
                    if ex:
                        ex.stop()
                    bt.stop_process(proc)
                samples[label].append(rps)
                print("  %s: run %d: %.0f req/s" % (label, rep + 1, rps), file=sys.stderr, flush=True)
    finally:
        subprocess.run(["rm", "-rf", workdir])
    base = samples["compiled out"]
    rows = []
    for label, _, _ in configs:
        paired = [100.0 * (a / b - 1) for a, b in zip(samples[label], base)]
        rows.append({"config": label, "rps": summary(samples[label]), "paired_pct": paired,
                     "vs_compiled_out_pct": statistics.median(paired)})
    out["rows"] = rows
    return out


def verdict(ok, unresolved=False):
    return "not resolvable (noise)" if unresolved else ("met" if ok else "missed")


def markdown(res):
    o = ["ns per fire above the untraced loop (traced minus untraced, medians); the exporter's "
         "payment-auth program vs bpftrace on the same fire_loop.", ""]
    o += ["| site | exporter ns/fire | bpftrace count() | biz_metrics-like | exporter / count() | exporter counted | target |",
          "|---|---:|---:|---:|---:|---:|---|"]
    for r in res.get("per_fire", []):
        ok = r["exporter_vs_count"] <= TARGETS["count_ratio"] and r["exporter_vs_biz"] < 1
        o.append("| %s | %.0f | %.0f | %.0f | %.2f | %d of %d | ≤ %.1f× count(), below biz_metrics: %s |" % (
            r["site"], r["exporter"]["median"], r["count"]["median"], r["biz_metrics-like"]["median"],
            r["exporter_vs_count"], r["exporter_counted_last_run"], r["fires_per_run"],
            TARGETS["count_ratio"], verdict(ok)))
    s = res.get("scrape")
    if s:
        o += ["", "| /metrics scrape (50, HTTP round trip) | series | min ms | median ms | max ms | "
              "exporter's own (snapshot + render) | target |", "|---|---:|---:|---:|---:|---:|---|",
              "| billingd, --metrics all | %d | %.2f | %.2f | %.2f | %.2f ms | ≤ %.0f ms (median): %s |" % (
                  s["series"], s["scrape_ms"]["min"], s["scrape_ms"]["median"], s["scrape_ms"]["max"],
                  s["exporter_reported_ms"] or -1, TARGETS["scrape_ms"],
                  verdict(s["scrape_ms"]["median"] <= TARGETS["scrape_ms"]))]
    t = res.get("throughput")
    if t:
        o += ["", "| billingd (%d s runs, %d paired reps) | req/s median | vs compiled out (paired median, range) | target |"
              % (t["duration_s"], t["repetitions"]), "|---|---:|---|---|"]
        untraced = {r["config"].split(":")[0]: r for r in t["rows"] if r["config"].endswith("untraced")}
        for r in t["rows"]:
            target = ""
            if "exporter default" in r["config"]:
                site = r["config"].split(":")[0]
                limit = TARGETS["default_%s_pct" % site]
                noise = max(abs(p) for p in untraced[site]["paired_pct"]) if site in untraced else 0
                cost = -r["vs_compiled_out_pct"]
                target = "≤ %.0f %%: %s" % (limit, verdict(cost <= limit, unresolved=noise > limit and cost > limit))
            p = r["paired_pct"]
            o.append("| %s | %.0f | %+.1f %% (%+.1f .. %+.1f) | %s |" % (
                r["config"], r["rps"]["median"], r["vs_compiled_out_pct"], min(p), max(p), target))
    for k, v in res.get("skipped", {}).items():
        o.append("\n%s: skipped: %s" % (k, v))
    return "\n".join(o)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--quick", action="store_true", help="1 repetition, short runs, standard site only")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    build, source = os.path.abspath(a.build_dir), os.path.abspath(a.source_dir)
    exe = os.path.join(build, "tools", "billing-exporter", "billing-exporter")
    why = bt.why_no_tracing("bpftrace")
    if why or not os.path.exists(exe):
        print("exporter bench skipped: " + (why or "billing-exporter is not built (-Dexporter)"))
        sys.exit(bt.SKIP)
    reps = 1 if a.quick else a.reps
    res = {"targets": TARGETS, "skipped": {}}
    res["per_fire"] = per_fire(build, exe, 200000 if a.quick else 1000000, reps)
    workdir = tempfile.mkdtemp(prefix="billing-exscrape-")
    try:
        res["scrape"] = scrape_time(build, exe, workdir)
    finally:
        subprocess.run(["rm", "-rf", workdir])
    res["throughput"] = throughput(build, source, exe, reps, 3 if a.quick else 10,
                                   ("standard",) if a.quick else ("standard", "fast"))
    summary_rows = []
    for r in res["per_fire"]:
        summary_rows.append(("exporter ns/fire, %s site (vs bpftrace count())" % r["site"],
                             "%.0f ns (%.2f×)" % (r["exporter"]["median"], r["exporter_vs_count"]),
                             "≤ 1.3× count()"))
    summary_rows.append(("exporter /metrics scrape, %d series" % res["scrape"]["series"],
                         "%.2f ms" % res["scrape"]["scrape_ms"]["median"], "≤ 5 ms"))
    for r in res["throughput"]["rows"]:
        if "exporter default" in r["config"]:
            site = r["config"].split(":")[0]
            summary_rows.append(("billingd traced by the exporter (default), %s site" % site,
                                 "%+.1f %%" % r["vs_compiled_out_pct"],
                                 "≤ %.0f %%" % TARGETS["default_%s_pct" % site]))
    res["summary"] = summary_rows
    print(markdown(res))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

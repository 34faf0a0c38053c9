#!/usr/bin/env python3
"""What the slow-request trails cost a request, side by side in one run.

  python3 bench/trail_bench.py --build-dir build [--quick] [--billingd]

trail_loop (bench/trail_loop.c) serves requests through BILLING_REQUEST_*
in a stats build, at default settings (trails on), with the trails off
(BILLING_STATS_SLOW=off) and with the probes compiled out
(trail_loop_disabled), for three shapes:

  fast       request-start and request-done 1 ms later, under every threshold
  fast-work  the same with payment-auth, db-query-start (by ID) and error inside
  slow       request-start and request-done 300 ms later: each a committed trail

Instructions per request come from callgrind over serve() alone, by
difference of N and 2N requests (start-up cancels out): exact and
repeatable here.  ns per request (the thread's CPU time) come from runs
interleaved per repetition, as ratios to the compiled-out run of the same
repetition: a busy moment lands on every configuration.  --billingd adds
billingd-stats's instructions and clock reads per request under callgrind
(bench/billingd_bench.py's fixed schedule), trails on and off.  Prints a
Markdown table, then one JSON object.  Target (issue 44): a fast request's
start + done at most 200 instructions at default settings.
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

SHAPES = ("fast", "fast-work", "slow")
CONFIGS = (("on", "trail_loop", {}), ("off", "trail_loop", {"BILLING_STATS_SLOW": "off"}),
           ("compiled out", "trail_loop_disabled", {}))
FAST_TARGET = 200


def callgrind(exe, shape, env, n):
    """Instructions per request of serve(), by difference of n and 2n."""
    counts = []
    for requests in (n, 2 * n):
        work = tempfile.mkdtemp(prefix="trail-callgrind-")
        try:
            r = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=serve",
                                "--callgrind-out-file=" + os.path.join(work, "out"), exe, shape, str(requests)],
                               capture_output=True, text=True, env=env, timeout=600)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
        if r.returncode != 0 or not m:
            raise RuntimeError("callgrind %s %s: %s" % (exe, shape, r.stderr[-300:]))
        counts.append(int(m.group(1)))
    return (counts[1] - counts[0]) / n


def timed(exe, shape, env, n):
    r = subprocess.run([exe, shape, str(n)], capture_output=True, text=True, env=env, timeout=600)
    m = re.search(r"ns_per_request (\S+)", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError("%s %s: %s" % (exe, shape, r.stderr[-300:]))
    return float(m.group(1))


def measure(build, quick, workdir):
    bench = os.path.join(build, "bench")
    base = dict(os.environ, BILLING_STATS_DIR=os.path.join(workdir, "segments"))
    base.pop("BILLING_STATS_SLOW", None)
    res = {"instructions": {}, "ns": {}, "ns_ratio": {}}
    have_valgrind = shutil.which("valgrind") is not None
    for shape in SHAPES:
        for label, exe, extra in CONFIGS:
            if have_valgrind:
                key = "%s/%s" % (shape, label)
                res["instructions"][key] = callgrind(os.path.join(bench, exe), shape, dict(base, **extra),
                                                     2000 if quick else 20000)
    reps, n = (2, 200000) if quick else (5, 2000000)
    runs = {}
    for _ in range(reps):  # interleaved: every shape and configuration once a repetition
        for shape in SHAPES:
            for label, exe, extra in CONFIGS:
                runs.setdefault((shape, label), []).append(timed(os.path.join(bench, exe), shape, dict(base, **extra), n))
    for shape in SHAPES:
        out = runs[(shape, "compiled out")]
        for label, _, _ in CONFIGS:
            key = "%s/%s" % (shape, label)
            res["ns"][key] = statistics.median(runs[(shape, label)])
            # per repetition, the configuration's time over the compiled-out loop's less it: what the probes add
            res["ns_ratio"][key] = statistics.median(
                (a - o) / max(runs[(shape, "off")][i] - o, 1e-9) for i, (a, o) in enumerate(zip(runs[(shape, label)], out)))
    if not have_valgrind:
        res["instructions"] = {"skipped": "valgrind is not installed"}
    return res


def billingd(build):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import billingd_bench
    exe = os.path.join(build, "examples", "billingd", "billingd-stats")
    if not shutil.which("valgrind") or not os.path.exists(exe):
        return {"skipped": "valgrind or billingd-stats missing"}
    out = {}
    workdir = tempfile.mkdtemp(prefix="trail-billingd-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    saved = {k: os.environ.get(k) for k in ("BILLING_STATS_DIR", "BILLING_STATS_SLOW")}
    try:
        os.environ["BILLING_STATS_DIR"] = os.path.join(workdir, "segments")
        for label, slow in (("on", None), ("off", "off")):
            per = []
            for _ in range(2):
                if slow:
                    os.environ["BILLING_STATS_SLOW"] = slow
                else:
                    os.environ.pop("BILLING_STATS_SLOW", None)
                a = billingd_bench.callgrind_run(exe, billingd_bench.SCHEDULE_FLOWS, workdir)
                b = billingd_bench.callgrind_run(exe, 2 * billingd_bench.SCHEDULE_FLOWS, workdir)
                n = b["requests"] - a["requests"]
                per.append(((b["instructions"] - a["instructions"]) / n, (b["clock_calls"] - a["clock_calls"]) / n))
            out[label] = {"instructions_per_request": statistics.median(p[0] for p in per),
                          "clock_reads_per_request": statistics.median(p[1] for p in per), "runs": per}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(workdir, ignore_errors=True)
    out["trails_instructions"] = out["on"]["instructions_per_request"] - out["off"]["instructions_per_request"]
    out["trails_clock_reads"] = out["on"]["clock_reads_per_request"] - out["off"]["clock_reads_per_request"]
    return out


def markdown(res):
    ins, ns, ratio = res["instructions"], res["ns"], res["ns_ratio"]
    o = ["| shape | trails on (default) | trails off | compiled out | trails' part |", "|---|---|---|---|---|"]
    for shape in SHAPES:
        cells = []
        for label, _, _ in CONFIGS:
            key = "%s/%s" % (shape, label)
            i = ins.get(key)
            cells.append(("%.0f instr, " % i if i is not None else "") + "%.1f ns" % ns[key])
        part = ins.get("%s/on" % shape, 0) - ins.get("%s/off" % shape, 0) if "%s/on" % shape in ins else None
        cells.append(("%.0f instr; " % part if part is not None else "")
                     + "on adds %.2fx what off adds to the bare loop" % ratio["%s/on" % shape])
        o.append("| %s | %s |" % (shape, " | ".join(cells)))
    fast = ins.get("fast/on")
    if fast is not None:
        o.append("")
        over = fast - ins["fast/compiled out"]
        o.append("A fast request's start + done at default settings: %.0f instructions over compiled out "
                 "(target <= %d: %s)." % (over, FAST_TARGET, "met" if over <= FAST_TARGET else "MISSED"))
    b = res.get("billingd")
    if b and "skipped" not in b:
        o.append("billingd-stats under callgrind (fixed schedule): %.0f instructions and %.2f clock reads per "
                 "request with the trails on, %.0f and %.2f off: the trails %+.0f instructions, %+.2f clock reads."
                 % (b["on"]["instructions_per_request"], b["on"]["clock_reads_per_request"],
                    b["off"]["instructions_per_request"], b["off"]["clock_reads_per_request"],
                    b["trails_instructions"], b["trails_clock_reads"]))
    return o


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--billingd", action="store_true", help="also billingd-stats per request, trails on and off")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    if not os.path.exists(os.path.join(build, "bench", "trail_loop")):
        print("trail_bench.py: %s/bench/trail_loop is not built (ninja -C BUILD bench/trail_loop "
              "bench/trail_loop_disabled)" % build, file=sys.stderr)
        return 77
    workdir = tempfile.mkdtemp(prefix="trail-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        res = measure(build, a.quick, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if a.billingd:
        res["billingd"] = billingd(build)
    print("\n".join(markdown(res)))
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

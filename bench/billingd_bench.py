"""The benchmark's billingd part: billingd end to end under billing-load.

billingd at saturation (billing-load, gateway latency 0), built with probes
compiled out (a nested build with -Dprobes=disabled, so the library's own
sites are gone too), compiled in and untraced, and traced by the shipped
bpftrace scripts tps, biz_metrics and request_latency (attached with -p).
The configurations are interleaved within each repetition, so a slow
moment of the machine spreads over all of them instead of one.

instructions(): the same configurations (and billingd-stats) under
callgrind over a fixed schedule of requests (SCHEDULE_FLOWS customer flows
on one connection, one at a time): instructions, clock reads (calls of
clock_gettime, gettimeofday, time) and rdtsc per request, in the threads
that serve, exact where throughput is noise.  tests/perf holds the same
figures against budgets (tests/perf/test_billingd.py).

run_bench.py runs the end-to-end part; stats_bench.py --billingd-instructions
runs instructions() alone.
"""
import glob
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import billingtest as bt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "perf"))
import perftest  # noqa: E402  (callgrind's output read: instructions, clock reads)

SCRIPTS = ("tps", "biz_metrics", "request_latency")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, proc, timeout=20):
    """Once billingd answers /healthz.  A request is given the time left,
    not a second: one that gave up while billingd (under callgrind, slow to
    start) was still serving it would have it serve another, and a count
    of requests served would not be the one asked for."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"billingd exited early ({proc.returncode})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=max(1, deadline - time.time())) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("billingd did not answer /healthz")


def wait_attached(out_path, proc, timeout=60):
    """bpftrace prints 'Attaching N probes...' before attaching; the next
    line (a script's BEGIN banner) or a short grace period means attached."""
    deadline = time.time() + timeout
    seen = None
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"bpftrace exited early: {open(out_path).read()[-400:]}")
        text = open(out_path).read()
        if "Attaching" in text:
            seen = seen or time.time()
            after = text.split("Attaching", 1)[1]
            if after.count("\n") >= 2 or time.time() - seen > 3:
                return
        time.sleep(0.1)
    raise RuntimeError("bpftrace did not attach in time")


def billing_load_runner(load):
    def run_load(port, duration, concurrency):
        r = subprocess.run([load, "--url", f"http://127.0.0.1:{port}", "--duration", str(duration),
                            "--concurrency", str(concurrency), "--json"],
                           capture_output=True, text=True, timeout=duration + 120)
        # Exit 1: some request got no answer or an unexpected one; the
        # summary is still printed and the figures still count, noted.
        if r.returncode not in (0, 1):
            raise RuntimeError(f"billing-load failed ({r.returncode}): {r.stderr[-300:]}")
        for line in reversed(r.stdout.strip().splitlines()):
            if line.strip().startswith("{"):
                d = json.loads(line)
                bad = d.get("server_errors", 0) + d.get("transport_errors", 0) + d.get("unexpected", 0)
                if bad:
                    print(f"  note: billing-load saw {bad} server/transport errors or unexpected answers", flush=True)
                return float(d["throughput_rps"]), float(d["latency_ms"]["p99"])
        raise RuntimeError(f"billing-load printed no JSON summary: {r.stdout[-300:]}")
    return run_load


WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk_runner(script):
    def run_load(port, duration, concurrency):
        r = subprocess.run(["wrk", "-t2", f"-c{concurrency}", f"-d{duration}s", "--latency", "-s", script,
                            f"http://127.0.0.1:{port}/invoices"],
                           capture_output=True, text=True, timeout=duration + 120)
        rps = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
        p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", r.stdout, re.M)
        errors = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
        if r.returncode != 0 or not rps or not p99:
            raise RuntimeError(f"wrk failed ({r.returncode}): {r.stdout[-300:]} {r.stderr[-300:]}")
        if errors:
            raise RuntimeError(f"wrk: {errors.group(1)} requests answered with an error")
        return float(rps.group(1)), float(p99.group(1)) * WRK_UNITS[p99.group(2)]
    return run_load


def one_run(billingd, run_load, script, duration, concurrency, workdir):
    port = free_port()
    out = open(os.path.join(workdir, "billingd.out"), "w")
    srv = subprocess.Popen([billingd, "--port", str(port), "--gateway-latency-ms", "0",
                            "--db", os.path.join(workdir, f"bench-{port}.db")],
                           stdout=out, stderr=subprocess.STDOUT)
    tracer = None
    try:
        wait_healthy(port, srv)
        if script is not None:
            tpath = os.path.join(workdir, "bpftrace.out")
            tout = open(tpath, "w")
            tracer = subprocess.Popen(["bpftrace", "-p", str(srv.pid)] + script, stdout=tout,
                                      stderr=subprocess.STDOUT)
            wait_attached(tpath, tracer)
        result = run_load(port, duration, concurrency)
        if tracer is not None and tracer.poll() is not None:
            raise RuntimeError("bpftrace exited during the load run")
        return result
    finally:
        if tracer is not None and tracer.poll() is None:
            bt.interrupt_bpftrace(tracer, 30)
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
        out.close()
        for f in os.listdir(workdir):
            if f.startswith(f"bench-{port}.db"):
                os.unlink(os.path.join(workdir, f))


def nested_billingd(build_dir, source_dir, name, options):
    """billingd from a nested build BUILD_DIR/bench/NAME configured with
    OPTIONS (set up and built on demand)."""
    nested = os.path.join(build_dir, "bench", name)
    what = "nested %s build" % " ".join(options)
    if not os.path.exists(os.path.join(nested, "build.ninja")):
        r = subprocess.run(["meson", "setup", nested, source_dir, *options], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(what + ": meson setup failed: " + r.stdout[-400:])
    r = subprocess.run(["ninja", "-C", nested, "examples/billingd/billingd"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(what + ": billingd failed to build: " + r.stdout[-400:])
    return os.path.join(nested, "examples", "billingd", "billingd")


def noprobes_billingd(build_dir, source_dir):
    """billingd with its probes compiled out."""
    return nested_billingd(build_dir, source_dir, "build-noprobes", ["-Dprobes=disabled", "-Dtool=disabled"])


def script_args(source_dir, name):
    """The shipped script's path, or None when it is not in the tree."""
    path = os.path.join(source_dir, "d-scripts", "bpftrace", name + ".bt")
    return [path] if os.path.exists(path) else None


def spread(values):
    med = statistics.median(values)
    return {"min": min(values), "median": med, "max": max(values), "runs": values,
            "spread_pct": 100.0 * (max(values) - min(values)) / med if med else None}


def end_to_end(build_dir, source_dir, reps, duration, skip, concurrency=16):
    billingd = os.path.join(build_dir, "examples", "billingd", "billingd")
    load = os.path.join(build_dir, "examples", "billing-load", "billing-load")
    res = {"duration_s": duration, "concurrency": concurrency, "repetitions": reps, "rows": []}
    if not os.path.exists(billingd):
        res["skipped"] = "examples/billingd/billingd is not built in this tree"
        return res
    if os.path.exists(load):
        run_load, res["load"] = billing_load_runner(load), "billing-load"
    elif shutil.which("wrk"):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wrk_invoices.lua")
        run_load, res["load"] = wrk_runner(script), "wrk (billing-load is not built): POST /invoices"
    else:
        res["skipped"] = "neither billing-load nor wrk is available"
        return res
    configs = []
    try:
        configs.append(("compiled out (-Dprobes=disabled)", noprobes_billingd(build_dir, source_dir), None, None))
    except RuntimeError as e:
        res["rows"].append({"config": "compiled out (-Dprobes=disabled)", "skipped": str(e)})
    configs.append(("compiled in, untraced", billingd, None, None))
    for name in SCRIPTS:
        if skip:
            res["rows"].append({"config": f"traced: {name}", "skipped": skip})
            continue
        args = script_args(source_dir, name)
        if args is None:
            res["rows"].append({"config": f"traced: {name}", "skipped": f"d-scripts/bpftrace/{name}.bt is missing"})
            continue
        configs.append((f"traced: {name}", billingd, args, f"d-scripts/bpftrace/{name}.bt"))
    samples = {c[0]: {"rps": [], "p99_ms": []} for c in configs}
    # The database on tmpfs when there is one: disk writes are the noisiest
    # part of a shared machine, and they are not what is measured here.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    workdir = os.path.join(shm, f"billing-bench-{os.getpid()}") if shm else \
        os.path.join(build_dir, "bench", "billingd-runs")
    os.makedirs(workdir, exist_ok=True)
    res["database"] = "tmpfs (/dev/shm)" if shm else "build directory"
    try:
        errors = {}
        # One discarded run first: page cache, CPU frequency and SQLite warm up.
        try:
            one_run(configs[0][1], run_load, None, max(2, duration // 3), concurrency, workdir)
        except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
            print(f"  warm-up run failed: {e}", flush=True)
        for rep in range(reps):
            for label, binary, script, _ in configs:
                if label in errors:
                    continue
                try:
                    rps, p99 = one_run(binary, run_load, script, duration, concurrency, workdir)
                except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
                    errors[label] = str(e)
                    continue
                samples[label]["rps"].append(rps)
                samples[label]["p99_ms"].append(p99)
                print(f"  billingd {label}: run {rep + 1}: {rps:.0f} req/s, p99 {p99:.2f} ms", flush=True)
    finally:
        if shm:
            shutil.rmtree(workdir, ignore_errors=True)
    base = None
    base_label = configs[0][0] if configs and configs[0][0].startswith("compiled out") else None
    for label, _, _, origin in configs:
        if label in errors or not samples[label]["rps"]:
            res["rows"].append({"config": label, "skipped": errors.get(label, "no run")})
            continue
        row = {"config": label, "rps": spread(samples[label]["rps"]),
               "p99_ms": spread(samples[label]["p99_ms"])}
        if origin:
            row["script"] = origin
        if label.startswith("compiled out"):
            base = row
        if base is not None and base_label not in errors:
            # Paired: each run against the compiled-out run of the same
            # repetition (they ran seconds apart), then the median.
            add_paired(row, samples[label], samples[base_label])
        res["rows"].append(row)
    return res


def add_paired(row, mine, base):
    """Each run against the compiled-out run of the same repetition."""
    for key, out in (("rps", "throughput"), ("p99_ms", "p99")):
        paired = [100.0 * (a / b - 1) for a, b in zip(mine[key], base[key])]
        row[f"{out}_paired_pct"] = paired
        row[f"{out}_vs_compiled_out_pct"] = statistics.median(paired)


def paired_cell(row, out):
    paired = row.get(f"{out}_paired_pct")
    if not paired:
        return "-"
    return f"{statistics.median(paired):+.1f}% ({min(paired):+.1f} .. {max(paired):+.1f})"


def verdict(row, target):
    """Throughput target: met, missed, or not resolvable (noise above it)."""
    if target is None or row.get("throughput_vs_compiled_out_pct") is None:
        return ""
    paired = row.get("throughput_paired_pct") or [row["throughput_vs_compiled_out_pct"]]
    diff, noise = row["throughput_vs_compiled_out_pct"], max(paired) - min(paired)
    head = f"within {target:g}%: "
    if abs(diff) <= target:
        return head + "met" + (f" (paired runs spread over {noise:.1f} points)" if noise > target else "")
    if diff > 0:
        return head + f"not resolved: faster than compiled out, paired runs spread over {noise:.1f} points"
    if noise > abs(diff):
        return head + f"not resolved: paired runs spread over {noise:.1f} points, more than the difference"
    return head + "MISSED"


TARGETS = {"compiled in, untraced": 1.0, "traced: biz_metrics": 5.0}  # % of throughput


def markdown(p4):
    o = ["### billingd end to end (billing-load at saturation)", ""]
    if p4.get("skipped"):
        return o + [f"Not measured: {p4['skipped']}.", ""]
    o += [f"Load: {p4['load']}, concurrency {p4['concurrency']}, {p4['duration_s']} s per run, against billingd "
          f"--gateway-latency-ms 0; {p4['repetitions']} runs per row, configurations interleaved; "
          "spread = (max - min) / median over the runs (it includes the machine's drift); "
          "\"vs compiled out\": each run against the compiled-out run of the same repetition, "
          "median (min .. max).", "",
          "| billingd | median req/s | spread | throughput vs compiled out | median p99 ms | spread | p99 vs compiled out | target |",
          "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in p4["rows"]:
        if "skipped" in r:
            o.append(f"| {r['config']} | skipped: {r['skipped']} | | | | | | |")
            continue
        o.append(f"| {r['config']} | {r['rps']['median']:.0f} | {r['rps']['spread_pct']:.1f}% | "
                 f"{paired_cell(r, 'throughput')} | {r['p99_ms']['median']:.2f} | "
                 f"{r['p99_ms']['spread_pct']:.1f}% | {paired_cell(r, 'p99')} | "
                 f"{verdict(r, TARGETS.get(r['config']))} |")
    scripts = [f"{r['config']}: {r['script']}" for r in p4["rows"] if r.get("script")]
    if scripts:
        o += ["", "Scripts: " + "; ".join(scripts) + "."]
    return o + [""]


def summary_rows(p4):
    """(what, result, target) rows for bench/README.md's summary."""
    if p4.get("skipped"):
        return [("billingd end to end", "not measured: " + p4["skipped"], "")]
    rows = []
    for r in p4["rows"]:
        what = f"billingd {r['config']} (billing-load at saturation, {p4['concurrency']} connections)"
        if "skipped" in r:
            rows.append((what, "skipped: " + r["skipped"], ""))
        elif r["config"].startswith("compiled out"):
            rows.append((what, f"{r['rps']['median']:,.0f} req/s (the baseline)", ""))
        else:
            rows.append((what, f"{paired_cell(r, 'throughput')} throughput ({r['rps']['median']:,.0f} req/s)",
                         verdict(r, TARGETS.get(r["config"]))))
    return rows


# --- instructions per request: callgrind over a fixed schedule ----------------
# The short run; the long one has twice as many.  The short run holds
# every label set the schedule makes (a flow's currency and gateway are its
# number % 3, its customer % 7: they repeat every 21 flows), so what the
# long one adds is requests of label sets counted before: a label set's
# first use (its row made, its labels interned) is not a request's cost.
SCHEDULE_FLOWS = 40
GATEWAYS = ("stripe-sim", "adyen-sim", "braintree-sim")


def request(conn, method, path, body=None):
    conn.request(method, path, json.dumps(body) if body is not None else None,
                 {"Content-Type": "application/json"} if body is not None else {})
    r = conn.getresponse()
    data = r.read()
    return r.status, json.loads(data) if data else None


def run_schedule(port, flows):
    """flows customer flows, one request at a time on one connection: an
    invoice, its payment, a read of it, and a refund of every other
    approved payment.  The same requests in the same order every run.
    Returns the number of requests sent."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    sent = 0
    try:
        for f in range(flows):
            amount, currency = 1000 + 37 * f, ("EUR", "USD", "GBP")[f % 3]
            status, inv = request(conn, "POST", "/invoices",
                                  {"customer_id": 1 + f % 7, "amount_minor": amount, "currency": currency})
            if status != 201:
                raise RuntimeError(f"schedule: POST /invoices answered {status}: {inv}")
            status, pay = request(conn, "POST", "/payments/authorize",
                                  {"invoice_id": inv["id"], "amount_minor": amount, "currency": currency,
                                   "gateway": GATEWAYS[f % 3]})
            request(conn, "GET", f"/invoices/{inv['id']}")
            sent += 3
            if status == 201 and pay.get("status") == "approved" and f % 2 == 0:
                request(conn, "POST", "/refunds", {"payment_id": pay["id"], "amount_minor": amount // 2,
                                                   "reason": "requested_by_customer"})
                sent += 1
    finally:
        conn.close()
    return sent


# billingd's own work on a request: what libmicrohttpd calls back (server.c).
HANDLERS = ("on_request", "on_completed")


def callgrind_run(billingd, flows, workdir, env=None):
    """billingd under callgrind serving run_schedule(flows), counted in
    the threads that serve (those libmicrohttpd calls on_request in), JSON
    hashed with a fixed seed (jansson's own is random: each run would
    look its keys up over other chains):
    {instructions, handled (inside HANDLERS: billingd's own work, without
    libmicrohttpd's event loop, whose count varies with timing), requests
    (served: the schedule's and the one /healthz, checked),
    clock_calls (calls of clock_gettime, gettimeofday, time), own_clock_calls
    (those not from libmicrohttpd), rdtsc (executed)}.  The main thread only
    starts and stops the service, the deadline reaper wakes every 100 ms:
    how often is a matter of time."""
    port = free_port()
    out = os.path.join(workdir, f"callgrind-{port}.out")
    log = open(os.path.join(workdir, "valgrind.log"), "w")
    srv = subprocess.Popen(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--separate-threads=yes",
                            f"--callgrind-out-file={out}", billingd, "--port", str(port),
                            "--gateway-latency-ms", "0", "--threads", "1", "--json-seed", "1",
                            "--db", os.path.join(workdir, f"bench-{port}.db")],
                           stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_healthy(port, srv, timeout=120)
        sent = run_schedule(port, flows)
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=120)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
        log.close()
    threads = sorted(glob.glob(glob.escape(out) + "-[0-9]*"))
    if srv.returncode != 0 or len(threads) < 2:
        raise RuntimeError(f"billingd under callgrind exited {srv.returncode} ({len(threads)} thread profiles): "
                           + open(os.path.join(workdir, "valgrind.log")).read()[-400:])
    res = dict.fromkeys(("instructions", "handled", "clock_calls", "own_clock_calls", "rdtsc", "requests"), 0)
    for path in threads:
        profile = perftest.Profile(path)
        os.unlink(path)
        if not profile.calls_into(HANDLERS[0]):
            continue
        res["requests"] += profile.calls.get(HANDLERS[1], 0)  # libmicrohttpd calls it once a request
        res["instructions"] += profile.total
        res["handled"] += sum(profile.inside.get(h, 0) for h in HANDLERS)
        res["clock_calls"] += sum(profile.clock_calls().values())
        res["own_clock_calls"] += sum(profile.clock_calls(but_from="libmicrohttpd").values())
        res["rdtsc"] += profile.executed(("rdtsc", "rdtscp"))
    if not res["handled"]:
        raise RuntimeError(f"billingd under callgrind: no thread ran {HANDLERS[0]} (server.c renamed it?)")
    if res["requests"] != sent + 1:  # the schedule's and one /healthz
        raise RuntimeError(f"billingd under callgrind served {res['requests']} requests, not the {sent} of the "
                           "schedule and one /healthz")
    return res


def instructions(build_dir, source_dir, runs=2):
    """Per request, by difference of a run of SCHEDULE_FLOWS flows and one
    of twice as many (start-up and shut-down cancel out), each configuration
    `runs` times: {rows: [{config, instructions_per_request, clock_reads_per_request, runs}]}."""
    if not shutil.which("valgrind"):
        return {"skipped": "valgrind is not installed"}
    configs = [("compiled out (-Dprobes=disabled)", lambda: noprobes_billingd(build_dir, source_dir)),
               ("compiled in, untraced", lambda: os.path.join(build_dir, "examples", "billingd", "billingd")),
               ("stats (billingd-stats)", lambda: os.path.join(build_dir, "examples", "billingd", "billingd-stats"))]
    res = {"flows": [SCHEDULE_FLOWS, 2 * SCHEDULE_FLOWS], "threads": 1, "rows": []}
    workdir = tempfile.mkdtemp(prefix="billing-callgrind-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    env_before = os.environ.get("BILLING_STATS_DIR")
    os.environ["BILLING_STATS_DIR"] = os.path.join(workdir, "segments")
    try:
        for label, find in configs:
            try:
                exe = find()
            except RuntimeError as e:
                res["rows"].append({"config": label, "skipped": str(e)})
                continue
            if not os.path.exists(exe):
                res["rows"].append({"config": label, "skipped": f"{exe} is not built"})
                continue
            per = []
            for _ in range(runs):
                a = callgrind_run(exe, SCHEDULE_FLOWS, workdir)
                b = callgrind_run(exe, 2 * SCHEDULE_FLOWS, workdir)
                n = b["requests"] - a["requests"]
                per.append({"instructions": (b["instructions"] - a["instructions"]) / n,
                            "clock_reads": (b["clock_calls"] - a["clock_calls"]) / n,
                            "rdtsc": (b["rdtsc"] - a["rdtsc"]) / n, "requests": n})
                print(f"  callgrind {label}: {per[-1]['instructions']:.0f} instructions, "
                      f"{per[-1]['clock_reads']:.2f} clock reads and {per[-1]['rdtsc']:.2f} rdtsc per request",
                      file=sys.stderr, flush=True)
            res["rows"].append({"config": label, "runs": per,
                                "instructions_per_request": statistics.median(p["instructions"] for p in per),
                                "clock_reads_per_request": statistics.median(p["clock_reads"] for p in per),
                                "rdtsc_per_request": statistics.median(p["rdtsc"] for p in per)})
    finally:
        if env_before is None:
            os.environ.pop("BILLING_STATS_DIR", None)
        else:
            os.environ["BILLING_STATS_DIR"] = env_before
        shutil.rmtree(workdir, ignore_errors=True)
    base = next((r for r in res["rows"] if r["config"].startswith("compiled out") and "skipped" not in r), None)
    for r in res["rows"]:
        if base and "skipped" not in r:
            r["vs_compiled_out_pct"] = 100.0 * (r["instructions_per_request"] / base["instructions_per_request"] - 1)
    return res


INSTRUCTIONS_TARGET_PCT = {"stats (billingd-stats)": 1.0}  # issue 44; tests/perf/budgets.json holds it


def instructions_markdown(res):
    if res.get("apart"):
        return [f"billingd's instructions per request: measured in a run of their own ({res['apart']})."]
    if res.get("skipped"):
        return [f"billingd instructions per request: not measured ({res['skipped']})."]
    when = f" (measured {res['date']})" if res.get("date") else ""
    o = [f"billingd under callgrind{when}, a fixed schedule on one connection ({res['flows'][0]} and "
         f"{res['flows'][1]} customer flows, per request by difference; --threads {res['threads']}, "
         "gateway latency 0):", "",
         "| billingd | instructions per request | vs compiled out | clock reads per request | rdtsc per request | target |",
         "|---|---:|---:|---:|---:|---|"]
    for r in res["rows"]:
        if "skipped" in r:
            o.append(f"| {r['config']} | skipped: {r['skipped']} | | | | |")
            continue
        target = INSTRUCTIONS_TARGET_PCT.get(r["config"])
        pct = r.get("vs_compiled_out_pct")
        verdict = "" if target is None or pct is None else \
            f"<= {target:g} %: {'met' if pct <= target else 'MISSED'}"
        rdtsc = f"{r['rdtsc_per_request']:.2f}" if "rdtsc_per_request" in r else "not counted"
        o.append(f"| {r['config']} | {r['instructions_per_request']:,.0f} | "
                 f"{'-' if pct is None else f'{pct:+.2f} %'} | {r['clock_reads_per_request']:.2f} | {rdtsc} | {verdict} |")
    before = res.get("before")
    if before:
        rows = {r["config"]: r for r in before["rows"] if "skipped" not in r}
        st, out = rows.get("stats (billingd-stats)"), rows.get("compiled out (-Dprobes=disabled)")
        if st and out:
            o += ["", f"Before ({before['source']}, measured in the same session, the same way): stats "
                  f"{st['vs_compiled_out_pct']:+.2f} % ({st['instructions_per_request']:,.0f} vs "
                  f"{out['instructions_per_request']:,.0f} compiled out), {st['clock_reads_per_request']:.2f} "
                  "clock reads per request."]
    return o

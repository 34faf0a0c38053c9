#!/usr/bin/env python3
"""Runs a bpftrace twin from d-scripts/ against scripts-workload and asserts
the figures it prints (expected.py holds them).

usage: run_scripts.py --bpftrace PATH --workload PATH --scripts DIR CASE

Exit status: 0 pass, 1 fail (the reason on stderr), 77 skip (not root, no
bpftrace, no tracefs: the reason on stdout).

How a run goes: the workload starts with --wait-signal and blocks; the
script is started on it (-p PID for the USDT scripts, PID as an argument
for the system views); once the script prints its first line (BEGIN runs
after every probe is attached) the harness sends SIGUSR1, the workload
fires its known sequence, lingers past one interval and exits, which ends
the script and makes it print its totals.
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "d-scripts"))
import expected as X  # noqa: E402
from fold_stacks import fold  # noqa: E402  the folder SREs run, tested here

READY = re.compile(r'^(Tracing|Sampling)|"type":"start"')
TIMEOUT = 90


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(77)


def tracing_available(bpftrace):
    if not bpftrace or not shutil.which(bpftrace):
        skip("bpftrace not found")
    if os.geteuid() != 0:
        skip("needs root to load BPF programs")
    if not os.path.ismount("/sys/kernel/tracing"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
                       stderr=subprocess.DEVNULL, check=False)
        if not os.path.ismount("/sys/kernel/tracing"):
            skip("tracefs is not mounted and cannot be mounted")


class Reader(threading.Thread):
    """Collects a process's stdout lines; signals when one matches."""

    def __init__(self, proc, pattern=None):
        super().__init__(daemon=True)
        self.proc, self.pattern = proc, pattern
        self.lines, self.matched = [], threading.Event()

    def run(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            if self.pattern and self.pattern.search(line):
                self.matched.set()

    def text(self):
        return "\n".join(self.lines)


def start_workload(args, mode, extra=()):
    cmd = [args.workload, mode, "--wait-signal", "--linger-ms", "1600", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    reader = Reader(proc, re.compile(r"^fired$"))
    reader.start()
    return proc, reader


def run(args, mode, scripts, extra=(), stop_early=()):
    """Runs each (name, argv-builder) of scripts against one workload.

    scripts: list of (name, build) where build(pid) returns the argv after
    the bpftrace binary.  stop_early: names to stop with SIGINT (Ctrl-C)
    once the workload has fired, while it still lives (stack symbols).
    Returns {name: stdout text}."""
    wl, wl_reader = start_workload(args, mode, extra)
    tracers = {}
    try:
        for name, build in scripts:
            p = subprocess.Popen([args.bpftrace, *build(wl.pid)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, cwd=args.scripts)
            r = Reader(p, READY)
            r.start()
            errs = []
            threading.Thread(target=lambda p=p, e=errs: e.append(p.stderr.read()),
                             daemon=True).start()
            tracers[name] = (p, r, errs)
        deadline = time.monotonic() + TIMEOUT
        for name, (p, r, errs) in tracers.items():
            while not r.matched.wait(0.2):
                if p.poll() is not None or time.monotonic() > deadline:
                    time.sleep(0.2)
                    raise Failure("%s did not start tracing:\n%s\n%s" % (
                        name, r.text(), b"".join(errs).decode(errors="replace")))
        wl.send_signal(signal.SIGUSR1)
        if stop_early:
            check(wl_reader.matched.wait(TIMEOUT), "the workload never fired")
            time.sleep(0.3)
            for name in stop_early:
                tracers[name][0].send_signal(signal.SIGINT)
        check(wl.wait(TIMEOUT) == 0, "the workload failed")
        out = {}
        for name, (p, r, errs) in tracers.items():
            try:
                p.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGINT)
                p.wait(10)
            r.join(5)
            out[name] = r.text()
            sys.stdout.write("----- %s output -----\n%s\n" % (name, out[name]))
        return out
    finally:
        for p, _, _ in tracers.values():
            if p.poll() is None:
                p.kill()
        if wl.poll() is None:
            wl.kill()


def usdt(script, *argv):
    return lambda pid: ["-p", str(pid), script, *map(str, argv)]


def by_pid(script, *argv):
    return lambda pid: [script, str(pid), *map(str, argv)]


# --- parsing ------------------------------------------------------------------

def section(text, title_re):
    """Lines after the heading line matching title_re, up to a blank line."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.search(title_re, line):
            body = []
            for line2 in lines[i + 1:]:
                if not line2.strip():
                    break
                body.append(line2)
            return body
    raise Failure("no section matching %r" % title_re)


def hist(text, name):
    """The rows of a bpftrace histogram map entry, e.g. @usecs[x]: -> {"[2K, 4K)": 85}."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip().startswith(name + ":") or line.strip() == name + ":":
            rows = {}
            for line2 in lines[i + 1:]:
                m = re.match(r"^(\[[^\]]*[\])])\s+(\d+)\s+\|", line2)
                if not m:
                    break
                if int(m.group(2)):
                    rows[m.group(1)] = int(m.group(2))
            return rows
    raise Failure("no histogram %s" % name)


def scalar_map(text, name):
    """@name[a, b]: N lines -> {("a", "b"): N}."""
    out = {}
    for m in re.finditer(r"^%s\[(.*)\]: (-?\d+)$" % re.escape(name), text, re.M):
        out[tuple(k.strip() for k in m.group(1).split(","))] = int(m.group(2))
    return out


def total_table(text, title, ncols):
    rows = []
    for line in section(text, title)[1:]:
        f = line.split()
        check(len(f) == ncols, "bad row %r" % line)
        rows.append(f)
    return rows


# --- the cases ------------------------------------------------------------------

def case_biz_metrics(args):
    out = run(args, "business", [("biz", usdt("biz_metrics.bt", 1))])["biz"]
    total = {(f[0], f[1], f[2], int(f[3])): (int(f[4]), int(f[5]))
             for f in total_table(out, r"TOTAL since start", 6)}
    check(total == X.BIZ_ROWS, "TOTAL rows differ:\n%s\nexpected\n%s" % (total, X.BIZ_ROWS))
    # Every event shows in exactly one interval: the intervals sum to the total.
    sums = {}
    for m in re.finditer(r"^\d\d:\d\d:\d\d  last 1 s\n(.*?)(?=\n\n|\Z)", out, re.S | re.M):
        for line in m.group(1).split("\n")[1:]:
            f = line.split()
            k = (f[0], f[1], f[2], int(f[3]))
            c, a = sums.get(k, (0, 0))
            sums[k] = (c + int(f[4]), a + int(f[5]))
    check(sums == X.BIZ_ROWS, "intervals do not add up to the total: %s" % sums)


def json_lines(out):
    objs = []
    for line in out.split("\n"):
        if line.startswith("{"):
            objs.append(json.loads(line))
    return objs


def case_biz_metrics_json(args):
    out = run(args, "business", [("biz", usdt("biz_metrics.bt", 1, 1))])["biz"]
    objs = json_lines(out)
    check(objs and objs[0]["type"] == "start", "no start object")
    totals = [o for o in objs if o["type"] == "total"]
    check(len(totals) == 1, "want one total object")
    check(totals[0]["rows"][-1] is None, "rows must end with the null sentinel")
    got = {(r["metric"], r["currency"], r["label"], r["code"]): (r["count"], r["amount_minor"])
           for r in totals[0]["rows"][:-1]}
    check(got == X.BIZ_ROWS, "JSON totals differ: %s" % got)
    sums = {}
    for o in objs:
        if o["type"] == "interval":
            check(o["interval_s"] == 1 and re.match(r"\d\d:\d\d:\d\d$", o["time"]), "bad interval")
            for r in o["rows"][:-1]:
                k = (r["metric"], r["currency"], r["label"], r["code"])
                c, a = sums.get(k, (0, 0))
                sums[k] = (c + r["count"], a + r["amount_minor"])
    check(sums == X.BIZ_ROWS, "JSON intervals do not add up: %s" % sums)


def case_errors(args):
    out = run(args, "business", [("err", usdt("errors.bt", 1))])["err"]
    total = {(f[0], int(f[1])): int(f[2]) for f in total_table(out, r"TOTAL since start", 3)}
    check(total == X.ERROR_ROWS, "TOTAL rows differ: %s" % total)


def case_errors_json(args):
    out = run(args, "business", [("err", usdt("errors.bt", 1, 1))])["err"]
    objs = json_lines(out)
    total = [o for o in objs if o["type"] == "total"][0]
    got = {(e["component"], e["code"]): e["count"] for e in total["errors"][:-1]}
    check(got == X.ERROR_ROWS, "JSON totals differ: %s" % got)
    sums = {}
    for o in objs:
        if o["type"] == "interval":
            for e in o["errors"][:-1]:
                k = (e["component"], e["code"])
                sums[k] = sums.get(k, 0) + e["count"]
    check(sums == X.ERROR_ROWS, "JSON intervals do not add up: %s" % sums)


def case_errors_cmd(args):
    """The -c form: bpftrace 0.17 needs the binary's path in the probe."""
    src = open(os.path.join(args.scripts, "errors.bt")).read()
    check("usdt::billing:" in src, "errors.bt has no usdt::billing: probe")
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "errors.bt")
        with open(script, "w") as f:
            f.write(src.replace("usdt::billing:", "usdt:%s:billing:" % os.path.abspath(args.workload)))
        cmd = "%s business --delay-ms 0 --linger-ms 1600" % args.workload
        proc = subprocess.run([args.bpftrace, "-c", cmd, script, "1"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
    out = proc.stdout.decode()
    sys.stdout.write(out)
    check(proc.returncode == 0, "bpftrace -c failed: %s" % proc.stderr.decode())
    total = {(f[0], int(f[1])): int(f[2]) for f in total_table(out, r"TOTAL since start", 3)}
    check(total == X.ERROR_ROWS, "TOTAL rows differ with -c: %s" % total)


def case_amount_dist(args):
    out = run(args, "business", [("amt", usdt("amount_dist.bt"))])["amt"]
    counts, sums, avgs = (scalar_map(out, n) for n in ("@count", "@sum_minor", "@avg_minor"))
    for key, (count, total, avg, rows) in X.AMOUNTS.items():
        check(counts.get(key) == count, "%s count %s, want %d" % (key, counts.get(key), count))
        check(sums.get(key) == total, "%s sum %s, want %d" % (key, sums.get(key), total))
        check(avgs.get(key) == avg, "%s avg %s, want %d" % (key, avgs.get(key), avg))
        got = hist(out, "@amount_minor[%s, %s]" % key)
        check(got == rows, "%s histogram %s, want %s" % (key, got, rows))
    check(len(counts) == len(X.AMOUNTS), "unexpected keys: %s" % counts)


def bucket_edge(us):
    """Upper edge of the log-linear bucket (8 per power of two) holding us."""
    if us < 8:
        return us + 1
    o = int(math.log2(us))
    sub = (us >> (o - 3)) & 7
    return (9 + sub) << (o - 3)


def percentile_edges(plan):
    values = sorted(v for v, n in plan for _ in range(n))
    return [bucket_edge(values[math.ceil(len(values) * q / 100) - 1]) for q in (50, 95, 99)]


def expected_latency_rows():
    rows = {}
    for handler, plan in X.REQUESTS.items():
        n = sum(c for _, c in plan)
        slow = sum(c for v, c in plan if v > X.SLO_THRESHOLD_MS * 1000)
        rows[handler] = [n, slow, "%d.%02d" % divmod(slow * 10000 // n, 100)] + percentile_edges(plan)
    return rows


def case_request_latency(args):
    out = run(args, "requests", [("lat", usdt("request_latency.bt", 100, 1))])["lat"]
    got = {}
    for f in total_table(out, r"TOTAL since start, slow: > 100 ms", 7):
        got[f[0]] = [int(f[1]), int(f[2]), f[3]] + [int(x) for x in f[4:]]
    want = expected_latency_rows()
    check(got == want, "TOTAL rows %s, want %s" % (got, want))
    check(re.search(r"^UNMEASURED \(duration 0, skipped\): %d$" % X.UNMEASURED, out, re.M),
          "UNMEASURED line missing or wrong")
    for handler, rows in X.LATENCY_HIST.items():
        h = hist(out, "@usecs[%s]" % handler)
        check(h == rows, "%s histogram %s, want %s" % (handler, h, rows))
    # intervals: counts and slow counts add up to the totals
    sums = {}
    for m in re.finditer(r"last 1 s, slow: > 100 ms\n(.*?)(?=\n\n|\Z)", out, re.S):
        for line in m.group(1).split("\n")[1:]:
            f = line.split()
            c = sums.setdefault(f[0], [0, 0])
            c[0] += int(f[1])
            c[1] += int(f[2])
    check(sums == {h: r[:2] for h, r in want.items()}, "intervals do not add up: %s" % sums)


def case_request_latency_json(args):
    out = run(args, "requests", [("lat", usdt("request_latency.bt", 100, 1, 1))])["lat"]
    objs = json_lines(out)
    total = [o for o in objs if o["type"] == "total"][0]
    check(total["unmeasured"] == X.UNMEASURED and total["threshold_ms"] == 100, "bad total header")
    got = {h["handler"]: [h["count"], h["slow"], "%.2f" % h["slow_pct"], h["p50_us"], h["p95_us"],
                          h["p99_us"]] for h in total["handlers"][:-1]}
    check(got == expected_latency_rows(), "JSON totals %s" % got)


def case_request_latency_threshold(args):
    """A threshold argument of 30 ms: payment.authorize's 40 ms requests are slow too."""
    out = run(args, "requests", [("lat", usdt("request_latency.bt", 30, 1))])["lat"]
    got = {f[0]: (int(f[1]), int(f[2]), f[3])
           for f in total_table(out, r"TOTAL since start, slow: > 30 ms", 7)}
    check(got == {"invoice.create": (100, 5, "5.00"), "payment.authorize": (50, 50, "100.00")},
          "TOTAL rows with 30 ms %s" % got)


def case_slow_requests(args):
    out = run(args, "requests", [("slow", usdt("slow_requests.bt"))])["slow"]
    trails = {}
    for block in re.finditer(r"^SLOW REQUEST (\d+) (\S+)\n((?:  \+.*\n?)*)", out, re.M):
        rid = int(block.group(1))
        check(rid not in trails, "request %d printed twice" % rid)
        events = [re.match(r"  \+\s*(\d+) us  (\S+)\s+(.*)$", l).groups()
                  for l in block.group(3).rstrip("\n").split("\n")]
        trails[rid] = (block.group(2), events)
    want_ids = set(X.SLOW_INVOICE_IDS + X.SLOW_PAYMENT_IDS)
    check(set(trails) == want_ids, "slow requests %s, want %s" % (sorted(trails), sorted(want_ids)))
    for rid, (handler, events) in trails.items():
        names = [e[1] for e in events]
        offsets = [int(e[0]) for e in events]
        check(offsets[0] == 0 and offsets == sorted(offsets), "%d: offsets out of order" % rid)
        if rid in X.SLOW_INVOICE_IDS:
            check(handler == "invoice.create" and names == X.INVOICE_TRAIL,
                  "%d: trail %s" % (rid, names))
            check("tx=%d kind=invoice amount=1234 EUR" % rid in events[1][2], "%d: %s" % (rid, events[1]))
            check(events[-1][2] == "handler=invoice.create status=0 duration_us=150000",
                  "%d: %s" % (rid, events[-1]))
        else:
            declined = rid in X.DECLINED_PAYMENT_IDS
            check(handler == "payment.authorize" and
                  names == (X.DECLINED_TRAIL if declined else X.PAYMENT_TRAIL),
                  "%d: trail %s" % (rid, names))
            auth = [e for e in events if e[1] == "payment-auth"][0][2]
            check(auth == "amount=5000 USD gateway=stripe-sim result=%d" % (51 if declined else 0),
                  "%d: %s" % (rid, auth))
            if declined:
                check(events[5][2] == "component=gateway code=402", "%d: %s" % (rid, events[5]))
            check(events[-1][2] == "handler=payment.authorize status=%d duration_us=250000"
                  % (402 if declined else 0), "%d: %s" % (rid, events[-1]))
    check(re.search(r"untracked requests \(128 in flight\): 0, events not kept \(31 per request\): 0",
                    out), "untracked/dropped line missing or not zero")


def case_slow_requests_bounds(args):
    """More events than a trail keeps, more requests than it follows."""
    out = run(args, "bounds", [("slow", usdt("slow_requests.bt"))])["slow"]
    m = re.search(r"^SLOW REQUEST %d report.export\n((?:  .*\n?)*)" % X.LONG_TRAIL_ID, out, re.M)
    check(m, "no trail for the long request")
    lines = m.group(1).rstrip("\n").split("\n")
    events = [l for l in lines if re.match(r"  \+", l)]
    check(len(events) == X.LONG_TRAIL_KEPT + 1, "long trail kept %d lines" % len(events))
    check(lines[-2] == "  ... %d more events not kept (31 per request)" % X.LONG_TRAIL_DROPPED,
          "no 'more events' line before request-done: %r" % lines[-2])
    check("request-done" in lines[-1] and "duration_us=500000" in lines[-1], "last line %r" % lines[-1])
    batch = {int(i) for i in re.findall(r"^SLOW REQUEST (\d+) invoice.create$", out, re.M)}
    check(batch == set(X.BATCH_IDS[:X.MAX_IN_FLIGHT]), "batch trails: %d of them" % len(batch))
    check(re.search(r"untracked requests \(128 in flight\): %d, events not kept \(31 per request\): %d"
                    % (len(X.BATCH_IDS) - X.MAX_IN_FLIGHT, X.LONG_TRAIL_DROPPED), out),
          "untracked/dropped line wrong")


def case_tps(args, json_mode=False):
    argv = [1] if json_mode else []
    out = run(args, "tps", [("tps", usdt("tps.bt", *argv))])["tps"]
    lines = []  # (txns, failed, partial)
    if json_mode:
        for o in json_lines(out)[1:]:
            check(o["partial"] == (o["covered_ms"] < 1000), "partial flag vs covered_ms: %s" % o)
            lines.append((o["transactions"], o["failed"], o["partial"]))
    else:
        for line in out.split("\n"):
            m = re.match(r"^\d\d:\d\d:\d\d\s+(\d+)\s+(\d+)(\s+partial \d+ ms)?$", line)
            if m:
                lines.append((int(m.group(1)), int(m.group(2)), bool(m.group(3))))
    check(len(lines) >= 5, "too few lines: %s" % lines)
    check(lines[0][2] and lines[-1][2], "first and last seconds must be marked partial: %s" % lines)
    check(not any(p for _, _, p in lines[1:-1]), "only the first and last may be partial")
    busy = [(t, f) for t, f, _ in lines if t]
    check(busy == X.TPS_SECONDS, "busy seconds %s, want %s" % (busy, X.TPS_SECONDS))
    first = [i for i, l in enumerate(lines) if l[0]][0]
    check(all(not lines[first + i][2] for i in range(3)), "a burst landed in a partial second")


def case_tps_json(args):
    case_tps(args, json_mode=True)


def case_system(args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "workload.dat")
        names = ["cswitch", "syscalls", "file_opens", "io_bytes", "page_faults", "cpu_profile"]
        out = run(args, "system", [(n, by_pid(n + ".bt", *([1] if n in ("cswitch", "io_bytes", "page_faults") else [])))
                                   for n in names],
                  extra=["--path", path], stop_early=["cpu_profile", "page_faults"])
    opens = scalar_map(out["file_opens"], "@opens")
    check(opens.get((path, "0")) == X.OPENS_OK, "opens of %s: %s" % (path, opens))
    check(opens.get((path + ".missing", "2")) == X.OPENS_MISSING, "ENOENT opens: %s" % opens)

    calls = scalar_map(out["syscalls"], "@syscalls")
    openat = calls.get(("257", "openat"), 0)
    write = calls.get(("1", "write"), 0)
    check(openat >= X.OPENS_OK + X.OPENS_MISSING, "openat count %d" % openat)
    check(write >= X.OPENS_OK, "write count %d" % write)

    m = re.search(r"^TOTAL\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", out["io_bytes"], re.M)
    check(m and int(m.group(2)) >= X.OPENS_OK * X.WRITE_SIZE, "io_bytes TOTAL write bytes")
    check(int(m.group(4)) >= X.OPENS_OK, "io_bytes TOTAL writes")

    m = re.search(r"^TOTAL\s+(\d+)$", out["page_faults"], re.M)
    check(m and int(m.group(1)) >= X.TOUCHED_PAGES, "page faults TOTAL")

    rows = total_table(out["cswitch"], r"TOTAL since start", 4)
    vol = sum(int(r[2]) for r in rows)
    check(vol >= X.SLEEPS, "voluntary switches %d < %d" % (vol, X.SLEEPS))
    sleeps = hist(out["cswitch"], "@offcpu_us[sleep]")
    long_ones = sum(c for b, c in sleeps.items()
                    if re.match(r"\[(8K|16K|32K|64K|128K|256K|512K|\d+M)", b))
    check(long_ones >= X.SLEEPS, "off-CPU sleeps of 8 ms or more: %d" % long_ones)

    folded = fold(out["cpu_profile"])
    check(folded, "no stack samples at all (the workload spins on CPU 0)")
    busy = sum(c for k, c in folded.items() if X.BUSY_FUNCTION in k)
    check(busy > 0, "no folded stack holds %s: %s" % (X.BUSY_FUNCTION, list(folded)[:5]))
    print("folded stacks with %s: %d samples" % (X.BUSY_FUNCTION, busy))


def case_parse(args):
    """Every .bt is compiled by bpftrace (dry run).  The USDT probes get the
    workload's path, as the -c form needs."""
    bts = sorted(f for f in os.listdir(args.scripts) if f.endswith(".bt"))
    check(bts, "no .bt scripts in %s" % args.scripts)
    with tempfile.TemporaryDirectory() as tmp:
        for bt in bts:
            src = open(os.path.join(args.scripts, bt)).read()
            script = os.path.join(tmp, bt)
            with open(script, "w") as f:
                f.write(src.replace("usdt::billing:", "usdt:%s:billing:" % os.path.abspath(args.workload)))
            proc = subprocess.run([args.bpftrace, "-d", script, "1"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=TIMEOUT)
            errors = [l for l in proc.stderr.decode().split("\n")
                      if "ERROR" in l and "RLIMIT_MEMLOCK" not in l]
            check(proc.returncode == 0 and not errors, "%s does not compile:\n%s" % (bt, proc.stderr.decode()))
            print("ok %s" % bt)


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpftrace", default="")
    ap.add_argument("--workload", required=True)
    ap.add_argument("--scripts", required=True, help="d-scripts/bpftrace")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    tracing_available(args.bpftrace)
    try:
        CASES[args.case](args)
    except Failure as e:
        print("FAIL: %s" % e, file=sys.stderr)
        return 1
    print("PASS %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every business script of the installed kit through `billing-probes
trace` on the service built against it, exact against its books:

    usage: test_trace.py plain|stats

tps, biz_metrics, amount_dist, request_latency, slow_requests and errors
run side by side on one service (a parent and 3 workers x 2 threads),
three ways:
- one -p: a worker; only its batch counts;
- several -p: the parent and the 3 workers, one worker SIGKILLed between
  two batches and replaced: the named processes' events count, not the
  replacement's (it was not named);
- --binary SERVICE --binary LIBRARY (and tps and biz_metrics with the two
  the other way round): the whole service, a worker SIGKILLed and the
  replacement forked while tracing counted too.
Each figure is compared with the books of exactly those batches and
processes: counts, 64-bit amounts and IDs in full, histograms bucket by
bucket, the slow requests' trails event by event.  And a target with none
of a script's probes is refused in one line, exit 2 (tps on the
executable alone: transaction-done is in the library; biz_metrics on the
library alone; tps on a process with no billing probe).

Each wait is for a condition (a script's first line, the semaphores
raised, the output holding every event); needs root and bpftrace."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import trace_figures as tf
import userpathtest as up
from userpathtest import bt

up.require_work()
bt.require_tracing()
VARIANT = sys.argv[1] if len(sys.argv) > 1 else "plain"
kit = up.kits()[VARIANT]
SERVICE, LIB = kit.service, kit.lib
# Once a script has printed its first line (BEGIN: every probe attached),
# its semaphores are up; tps prints a second about 0.1 s after it ends,
# slow_requests a trail a millisecond: seconds are plenty even on a loaded
# machine, and a consumer that never gets there fails in half a minute.
PRINT_WAIT = 30
EXACT_WAIT = {"tps": lambda l: bool(bt.tps_seconds(l)), "slow_requests": lambda l: l.startswith("SLOW REQUEST ")}


def refusals():
    """A target with none of the script's probes: one line, exit 2, at once."""
    sleeper = subprocess.Popen(["sleep", "600"])
    cases = [(["tps", "--binary", SERVICE], "the executable alone (transaction-done is in the library)"),
             (["biz_metrics", "--binary", LIB], "the library alone (the business probes are in the executable)"),
             (["tps", "-p", str(sleeper.pid)], "a process with no billing probe")]
    procs = [subprocess.Popen([kit.tool, "trace", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for args, _ in cases]
    try:
        for p, (args, what) in zip(procs, cases):
            try:
                out, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=up.DEADLINE)
                err = "still running after 30 s: %s" % err.strip()[-200:]
            shown_args = " ".join(args).replace(SERVICE, "SERVICE").replace(LIB, "LIB")
            bt.check(p.returncode == 2 and len(err.strip().splitlines()) == 1,
                     "trace %s, %s: refused in one line, exit 2 (exit %s: %r)" % (shown_args, what, p.returncode,
                                                                                  err.strip()))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        bt.kill_all(sleeper)


def trace_all(svc, how, tracers, named, run):
    """Starts TRACERS ([(script, target args)]), waits until they are
    counting in the NAMED processes, lets RUN() drive the service (it
    returns the batches run and the processes whose events count), then
    stops them and compares each script's figures with those books."""
    traces = [tf.Trace(kit, script, args) for script, args in tracers]
    try:
        running = [t for t in traces if t.started()]
        probes = set().union(*(tf.script_probes(kit, t.script) for t in running)) if running else set()
        bt.check(tf.wait_traced(kit, named, probes, PRINT_WAIT),
                 "%s: %d scripts started, their probes traced in %s" % (how, len(running), named))
        batches, pids = run()
        books = svc.books().only(batches, pids)
        for t in running:
            want = tf.want(t.script, books)
            if t.script in EXACT_WAIT:  # printed while running: wait for all of it
                n = want["transactions"] if t.script == "tps" else len(want)
                got, end = 0, time.monotonic() + PRINT_WAIT
                try:
                    while got < n:
                        line = t.lines.wait_for(EXACT_WAIT[t.script], "%s: %d of %d" % (t.what(), got, n),
                                                timeout=max(0, end - time.monotonic()))
                        got += bt.tps_seconds(line)[0][0] if t.script == "tps" else 1
                except RuntimeError as e:
                    print(e)
        for t in traces:
            rc, out, err = t.stop()
            if t not in running:
                continue
            got = tf.shown(t.script, out)
            want = tf.want(t.script, books)
            what = t.what().replace(SERVICE, "SERVICE").replace(LIB, "LIB")
            ok = bt.check(rc == 0 and got == want, "%s: %s: %s (exit %s)" % (how, what, summary(t.script, want, got), rc))
            if not ok:
                print("--- its output (tail) and stderr:\n%s\n%s\n---" % (out[-3000:], err[-1000:]))
    finally:
        for t in traces:
            if t.proc.poll() is None:
                t.proc.kill()
                t.proc.wait()


def summary(script, want, got):
    """One line: the figures wanted, and what differs."""
    if got == want:
        return "exact, %s" % brief(script, want)
    if got is None:
        return "no figures printed (want %s)" % brief(script, want)
    diff = []
    for k in sorted(set(want) | set(got), key=str):
        if want.get(k) != got.get(k):
            w, g = want.get(k), got.get(k)
            if isinstance(w, dict) and isinstance(g, dict):
                keys = [x for x in sorted(set(w) | set(g), key=str) if w.get(x) != g.get(x)][:2]
                diff.append("%s: %s" % (k, ", ".join("%s want %s got %s" % (x, w.get(x), g.get(x)) for x in keys)))
            else:
                diff.append("%s: want %s got %s" % (k, str(w)[:160], str(g)[:160]))
    return "DIFFERS from the books (%s)" % "; ".join(diff[:4])


def brief(script, figures):
    if script == "slow_requests":
        return "%d slow requests, %d events in their trails" % (len(figures), sum(len(e) for _, e in figures.values()))
    return ", ".join("%s %s" % (k, v if isinstance(v, int) else "%d rows" % len(v)) for k, v in figures.items())


def trace_service():
    """The three ways, one after the other, on one run of the service."""
    books_dir = tempfile.mkdtemp(prefix="userpath-books-")
    stats_dir = tempfile.mkdtemp(prefix="userpath-stats-")
    svc = up.Service(kit, books_dir, env=dict(os.environ, BILLING_STATS_DIR=stats_dir))
    try:
        # --- one -p: a worker ------------------------------------------------------------
        w0 = svc.workers[0]
        trace_all(svc, "one -p", [(s, ["-p", str(w0)]) for s in tf.SCRIPTS], [w0],
                  lambda: ({svc.batch()}, {w0}))

        # --- several -p: the whole service as it is; a worker killed and replaced ----------
        named = svc.pids()

        def several():
            first = svc.batch()
            svc.kill_worker(1)
            return {first, svc.batch()}, set(named)
        args = [a for pid in named for a in ("-p", str(pid))]
        trace_all(svc, "%d x -p" % len(named), [(s, args) for s in tf.SCRIPTS], named, several)

        # --- --binary EXE --binary LIB: every process, a replacement forked while tracing ---
        def whole():
            first = svc.batch()
            late = svc.kill_worker(2)
            bt.check(tf.wait_traced(kit, [late], tf.script_probes(kit, "slow_requests"), PRINT_WAIT),
                     "--binary: the worker forked while tracing is traced (pid %d)" % late)
            return {first, svc.batch()}, None
        tracers = [(s, ["--binary", SERVICE, "--binary", LIB]) for s in tf.SCRIPTS]
        tracers += [(s, ["--binary", LIB, "--binary", SERVICE]) for s in ("tps", "biz_metrics")]
        trace_all(svc, "--binary x2", tracers, svc.pids(), whole)
        # what the trails above had to print in full
        trails = [line for _, events in tf.want("slow_requests", svc.books()).values() for line in events]
        amounts = [int(a) for line in trails for a in re.findall(r"amount=(\d+)", line)]
        txs = [int(x) for line in trails for x in re.findall(r"tx=(\d+)", line)]
        bt.check(max(amounts, default=0) > 1 << 32 and txs and min(txs) > 1 << 32,
                 "the slow requests' trails held %d amounts, %d above 2^32, and %d transaction IDs, all above 2^32"
                 % (len(amounts), sum(a > 1 << 32 for a in amounts), len(txs)))
    finally:
        rc = svc.stop()
        shutil.rmtree(books_dir, ignore_errors=True)
        shutil.rmtree(stats_dir, ignore_errors=True)
    bt.check(rc == 0, "the service ends cleanly (exit %s)" % rc)


with kit.turn():
    refusals()
    trace_service()
bt.finish()

#!/usr/bin/env python3
"""Attach and detach bpftrace repeatedly while billing-load runs: no request
fails because of it, and every attachment really traced something.

usage: test_attach_detach.py BILLINGD BILLING_LOAD ATTACH_DETACH_BT [SECONDS]

The load runs at least SECONDS and until bpftrace has attached and
detached 3 times (an attach takes seconds on a loaded machine), then is
stopped with SIGINT: billing-load answers its requests in flight and
prints what it counted.
"""
import signal
import sys
import time

from billingdtest import Billingd, Bpftrace, Checker, bpftrace_usable, parse_maps, skip, start_load
import json

billingd_exe, load_exe, program = sys.argv[1:4]
seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
CYCLES = 3
LOAD_CAP_S = 120  # billing-load's own end, should the cycles never come

reason = bpftrace_usable()
if reason:
    skip(reason)

check = Checker()
svc = Billingd(billingd_exe, "--gateway-latency-ms", "0.5")
load = None
cycles = []
try:
    load = start_load(load_exe, svc.url, "--duration", str(LOAD_CAP_S), "--concurrency", "8")
    t0 = time.monotonic()
    while load.poll() is None and (len(cycles) < CYCLES or time.monotonic() - t0 < seconds):
        tracer = Bpftrace(program, svc.pid)
        time.sleep(0.3)
        if load.poll() is not None:  # keep every cycle inside the load
            tracer.stop()
            break
        rc, out = tracer.stop()
        cycles.append((rc, parse_maps(out).get(("fired", None), 0)))
        time.sleep(0.2)
    load.send_signal(signal.SIGINT)  # a no-op once it has ended by itself
    stdout, stderr = load.communicate(timeout=60)
    load_rc = load.returncode
finally:
    if load is not None and load.poll() is None:
        load.kill()
    svc_rc, svc_out = svc.stop()
    svc.cleanup()

summary = json.loads(stdout)
print("billing-load:", summary, stderr)
print("cycles (exit code, probes fired):", cycles)
check.true("attached and detached at least %d times" % CYCLES, len(cycles) >= CYCLES, str(cycles))
check.true("every bpftrace exited 0", all(rc == 0 for rc, _ in cycles), str(cycles))
check.true("every attachment saw probes fire", all(n > 0 for _, n in cycles), str(cycles))
check.eq("billing-load exit code", load_rc, 0)
check.eq("no transport errors", summary["transport_errors"], 0)
check.eq("no 5xx", summary["server_errors"], 0)
check.eq("no unexpected answers", summary["unexpected"], 0)
check.eq("every request answered", summary["responses"], summary["requests_sent"])
check.eq("billingd exit code", svc_rc, 0)
check.finish()

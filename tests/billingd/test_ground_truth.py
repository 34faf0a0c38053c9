#!/usr/bin/env python3
"""Ground truth under load: with bpftrace attached for the whole run, what
the probes counted equals what the database holds equals what the load
generator saw.  Nothing lost, nothing counted twice.

usage: test_ground_truth.py BILLINGD BILLING_LOAD GROUND_TRUTH_BT [SECONDS]
"""
import sys

from billingdtest import Billingd, Bpftrace, Checker, bpftrace_usable, check_books, run_load, skip

billingd_exe, load_exe, program = sys.argv[1:4]
seconds = sys.argv[4] if len(sys.argv) > 4 else "6"

reason = bpftrace_usable()
if reason:
    skip(reason)

check = Checker()
svc = Billingd(billingd_exe, "--gateway-latency-ms", "0.5", "--decline-rate", "0.15",
               "--threads", "4")
tracer = None
try:
    status, _, _ = svc.request("GET", "/healthz")  # before tracing: not counted
    assert status == 200
    tracer = Bpftrace(program, svc.pid)
    rc, load, err = run_load(load_exe, svc.url, "--duration", seconds, "--concurrency", "8",
                             "--invalid-rate", "0.08", "--refund-rate", "0.4", "--seed", "7")
    trace_rc, trace_out = tracer.stop()
    tracer = None
finally:
    if tracer is not None:
        tracer.stop()
    svc_rc, svc_out = svc.stop()

print("billing-load:", load)
print(trace_out)
check.eq("billing-load exit code", rc, 0)
check.eq("bpftrace exit code", trace_rc, 0)
check.eq("billingd exit code", svc_rc, 0)
check.true("billingd stopped cleanly", "stopped cleanly" in svc_out, svc_out)
rows = svc.counts()
svc.cleanup()
check_books(check, trace_out, rows, load)
check.finish()

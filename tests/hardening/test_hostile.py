#!/usr/bin/env python3
"""billingd under hostile clients on loopback: slow clients that send one
byte a second and a burst of silent connections, while an honest client
asks /healthz and billing-load does business under bpftrace.

usage: test_hostile.py BILLINGD BILLING_LOAD GROUND_TRUTH_BT
                       [SLOW BURST SECONDS RSS_MIB [BILLINGD_ARGS...]]

Asserts (generous bounds; the speed figures are printed, not judged):
  - every /healthz of the honest client is answered 200 within 5 s;
  - billing-load sees no transport error and no 5xx;
  - billingd's peak RSS stays under RSS_MIB (default 512 MiB);
  - what the probes counted equals the database equals billing-load
    (tests/billingd/billingdtest.check_books), under the same attack.
Prints: /healthz p50/p99/max before and under attack, RSS before and peak,
how many slow connections billingd closed.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "billingd"))
import billingtest as bt  # noqa: E402
from billingdtest import Billingd, Bpftrace, Checker, check_books, start_load  # noqa: E402
import hardeningtest  # noqa: E402

billingd_exe, load_exe, program = sys.argv[1:4]
slow_n, burst_n, seconds, rss_mib = (int(a) for a in (sys.argv[4:8] or (1000, 1000, 20, 512)))
RSS_BOUND_KIB = rss_mib * 1024

bt.require_tracing("bpftrace")
if not hardeningtest.raise_fd_limit(slow_n + burst_n + 256):
    bt.skip("RLIMIT_NOFILE's hard limit is below the %d sockets this test opens"
            % (slow_n + burst_n + 256))

check = Checker()
svc = Billingd(billingd_exe, "--threads", "4", "--gateway-latency-ms", "0.5",
               "--decline-rate", "0.15", *sys.argv[8:])
figures = {}
tracer = slow = burst = health = load = None
try:
    quiet = hardeningtest.HealthProbe(svc.port, every=0.05)
    time.sleep(2)
    quiet.stop()
    figures["healthz_quiet"] = quiet.summary()
    figures["rss_quiet_kib"] = hardeningtest.rss_kib(svc.pid)

    tracer = Bpftrace(program, svc.pid)
    health = hardeningtest.HealthProbe(svc.port, every=0.2)
    slow = hardeningtest.SlowClients(svc.port, slow_n, seconds)
    # the slow ones in place first: every connection open and sending
    bt.wait_for("%d slow clients connected and sending" % slow_n,
                lambda: slow.opened >= slow_n and slow.bytes_sent >= slow_n,
                timeout=60, interval=0.05)
    burst = hardeningtest.Burst(svc.port, burst_n)
    load = start_load(load_exe, svc.url, "--duration", str(max(5, seconds - 8)),
                      "--concurrency", "8", "--invalid-rate", "0.08", "--refund-rate", "0.4",
                      "--seed", "11")
    rss_samples = []
    while load.poll() is None:
        rss_samples.append(hardeningtest.rss_kib(svc.pid))
        time.sleep(0.5)
    load_out, load_err = load.communicate()
    figures["burst_open_at_end"] = burst.still_open()
    slow.stop()
    burst.stop()
    health.stop()
    time.sleep(0.5)  # a request in flight when health stopped is answered by now
    trace_rc, trace_out = tracer.stop()
    tracer = None
    figures["healthz_attacked"] = health.summary()
    figures["rss_peak_kib"] = hardeningtest.peak_rss_kib(svc.pid)
    figures["rss_sampled_max_kib"] = max(r for r in rss_samples if r)
    figures["slow_opened"] = slow.opened
    figures["slow_closed_by_server"] = slow.closed_by_server
    figures["burst_opened"] = burst.opened
finally:
    for part in (slow, burst, health):
        if part is not None:
            part.stop()
    if load is not None and load.poll() is None:
        load.kill()
    if tracer is not None:
        tracer.stop()
    svc_rc, svc_out = svc.stop()

print("figures:", json.dumps(figures, indent=1))
load_summary = json.loads(load_out) if load_out.strip().startswith("{") else None
print("billing-load:", load_summary, load_err[-2000:])
check.eq("billing-load exit code", load.returncode, 0)
check.eq("bpftrace exit code", trace_rc, 0)
check.eq("billingd exit code", svc_rc, 0)
check.true("billingd stopped cleanly", "stopped cleanly" in svc_out, svc_out[-2000:])
check.eq("every /healthz under attack answered 200 within 5 s", health.failures[:5], [])
check.true("the honest client asked often", len(health.latencies) >= seconds,
           str(figures["healthz_attacked"]))
check.true("the attack was real: %d slow connections opened, %d silent ones"
           % (slow.opened, burst.opened), slow.opened >= slow_n and burst.opened >= burst_n // 2)
check.true("peak RSS %d KiB under %d KiB" % (figures["rss_peak_kib"], RSS_BOUND_KIB),
           figures["rss_peak_kib"] < RSS_BOUND_KIB)
if load_summary is not None:
    check_books(check, trace_out, svc.counts(), load_summary,
                other_2xx=len(health.latencies))
else:
    check.true("billing-load printed its summary", False, load_err[-2000:])
svc.cleanup()
check.finish()

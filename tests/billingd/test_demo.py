#!/usr/bin/env python3
"""The README's demo command, short: it builds (nothing left to do here),
runs billingd under billing-load, shows the three shipped bpftrace scripts
live when it can trace, shows a slow request's exemplar in Prometheus and
the same request's trail from billing-probes slow run without root, and
leaves no process behind.

usage: test_demo.py RUN_DEMO_SH BUILD_DIR
"""
import re
import subprocess
import sys

from billingdtest import Checker, bpftrace_usable

demo, build_dir = sys.argv[1:3]
check = Checker()
p = subprocess.run(["bash", demo, "--duration", "4", "--no-install", "--build-dir", build_dir],
                   capture_output=True, text=True, timeout=240)
out = p.stdout + p.stderr
print(out[-6000:])
check.eq("demo exit code", p.returncode, 0)
check.true("billingd started", "billingd: listening on http://127.0.0.1:" in out)
check.true("billing-load printed its figures", "throughput" in out and "unexpected         0" in out)
check.true("billingd stopped cleanly", "billingd: stopped cleanly" in out)
check.true("no process left behind", "no process left behind" in out)
reason = bpftrace_usable()
if reason is None:
    for name in ("tps", "request_latency", "biz_metrics"):
        check.true(f"{name} attached and printed live", f"[{name}] Attaching" in out
                   and f"[{name}] Tracing" in out)
    check.true("tps printed per-second lines",
               sum(1 for line in out.splitlines() if line.startswith("[tps] ")
                   and line.split()[-1].isdigit()) >= 2)
else:
    check.true("says why tracing was skipped", "tracing skipped" in out, reason)
# Only this demo's processes: another demo may run on the machine.
work = re.search(r"stats segment in (/\S+/billing-demo\.\w+)/stats", out)
check.true("the demo names its work directory", work is not None)
check.true("the probe inventory (the dashboard's panel) shows billingd's stats target",
           re.search(r"^Probe inventory: stats:\S+ runs [1-9][0-9]* probes \(source stats, probe set [0-9a-f]{16}\)$",
                     out, flags=re.M) is not None)
# A slow request: the exemplar Prometheus returns for a latency bucket, and
# that request's trail from billing-probes slow, run without root.
exemplar = re.search(r'^Exemplar: request (\d+), handler (\S+), bucket le="([^"]+)" of '
                     r'billing_request_duration_seconds \(([\d.]+) s\)$', out, flags=re.M)
trail = re.search(r"^\$ billing-probes slow --stats-dir \$STATS_DIR   # as (\S+)\n"
                  r"SLOW REQUEST (\d+) (\S+) +([\d.]+) ms > ", out, flags=re.M)
check.true("Prometheus returns a slow request's exemplar", exemplar is not None)
check.true("billing-probes slow prints a trail without root", trail is not None and trail.group(1) != "root",
           trail and trail.group(1))
if exemplar and trail:
    check.eq("the trail is the exemplar's request", trail.group(2), exemplar.group(1))
    check.eq("... of the exemplar's handler", trail.group(3), exemplar.group(2))
    le = float(exemplar.group(3))
    check.true("the exemplar's bucket holds the trail's duration",
               float(trail.group(4)) / 1000 <= le, "%s ms, le=%s" % (trail.group(4), exemplar.group(3)))
if work:
    left = subprocess.run(["pgrep", "-f", "--", work.group(1) + "/"], capture_output=True, text=True)
    check.eq("pgrep finds nothing of the demo", left.stdout.strip(), "")
check.finish()

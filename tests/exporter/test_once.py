#!/usr/bin/env python3
"""For an SRE without Prometheus: --once prints one snapshot (a table, or
JSON lines with --format json) and exits 0; --interval repeats it; the
figures are the ones /metrics would serve.  --bpf-stats fills the BPF
program run counters."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")


def snapshot(*args):
    prog = h.FireProgram(fire, "threads", "2", "1000")
    try:
        p = subprocess.run([exe, "--pid", str(prog.pid), *args], capture_output=True, text=True,
                           timeout=60)
    finally:
        prog.release()
    return p


p = snapshot("--once", "--interval", "2", "--format", "json", "--bpf-stats")
lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
bt.check(p.returncode == 0, "--once exits 0 (%s)" % p.stderr.strip()[-200:])
want = sum(l["value"] for l in lines if l["metric"] == "billing_requests_total"
           and l["labels"] == {"handler": "threads.same", "status": "0"})
bt.check(want == 2000, "JSON lines: billing_requests_total = 2000 (got %s)" % want)
runs = sum(l["value"] for l in lines if l["metric"] == "billing_exporter_bpf_program_runs_total"
           and l["labels"].get("program") == "request__done")
bt.check(runs == 2000, "--bpf-stats: request__done ran 2000 times (got %s)" % runs)
bt.check(all("time" in l and "metric" in l for l in lines), "every line a JSON object with time and metric")

p = snapshot("--once", "--interval", "2")
rows = [l for l in p.stdout.splitlines() if l.startswith("billing_payments_total{")]
bt.check(p.returncode == 0 and len(rows) == 1 and rows[0].split()[-1] == "2000",
         "table: one payments row of 2000: %s" % rows)
bt.check("_bucket" not in p.stdout, "table leaves buckets out")

prog = h.FireProgram(fire, "threads", "1", "10")
ex = subprocess.Popen([exe, "--pid", str(prog.pid), "--interval", "1"], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
try:
    prog.fired()
    time.sleep(2.5)
finally:
    rc = bt.stop_process(ex, signal.SIGINT)
    prog.release()
out = ex.stdout.read()
bt.check(rc == 0 and out.count("billing_requests_total{") >= 2,
         "--interval 1 prints repeatedly until SIGINT, then exits 0 (%s, %d snapshots)"
         % (rc, out.count("billing_requests_total{")))
bt.finish()

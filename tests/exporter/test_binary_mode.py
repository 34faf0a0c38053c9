#!/usr/bin/env python3
"""--binary mode: the exporter attached to the billingd executable before
any billingd runs counts a service started after it, and the same
service restarted, without being restarted itself; the semaphores of the
new processes are raised by the kernel as they map the file.

billingd links libbillingprobes.so, as a user's service does: its business
probes are in the executable, the timing helpers' (request-*, ...) in the
library, so the library is named by a --binary of its own
(docs/exporter.md).  No other process maps this build's library while this
test runs: it is not parallel with other tests."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "billingd"))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402
from billingdtest import Billingd, run_load  # noqa: E402  (tests/billingd/billingdtest.py)

h.require_exporter_can_run()
exe, tool = h.env_path("BX_EXPORTER"), h.env_path("BX_TOOL")
billingd, load_exe = h.env_path("BX_BILLINGD"), h.env_path("BX_BILLING_LOAD")
library = h.env_path("BX_LIBBILLINGPROBES")


def maps_library(pid):
    """Does process pid map the library given to the exporter?"""
    with open("/proc/%d/maps" % pid) as f:
        paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    return any(p.startswith("/") and os.path.exists(p) and os.path.samefile(p, library) for p in paths)


exporter = h.Exporter(exe, "--binary", billingd, "--binary", library)
runs = []
try:
    for seed in ("3", "4"):  # started after the exporter, then restarted
        svc = Billingd(billingd, "--gateway-latency-ms", "0", "--threads", "2")
        try:
            traced = h.semaphores(tool, svc.pid).get("payment__auth", [])
            bt.check(maps_library(svc.pid), "run %d: billingd maps %s" % (len(runs) + 1, library))
            rc, load, _ = run_load(load_exe, svc.url, "--duration", "2", "--concurrency", "4",
                                   "--seed", seed)
            svc.stop()
            runs.append((rc, load, svc.counts(), traced))
        finally:
            svc.cleanup()
    s = exporter.samples()
finally:
    rc, out = exporter.stop()

for i, (load_rc, load, rows, traced) in enumerate(runs):
    bt.check(load_rc == 0 and load["invoices_created"] > 0, "run %d: load ran (%d invoices)"
             % (i + 1, load["invoices_created"]))
    bt.check(traced == ["yes"], "run %d: its semaphore raised by the kernel at exec: %s" % (i + 1, traced))
    bt.check(rows["invoices"] == load["invoices_created"], "run %d: rows == load" % (i + 1))
want = sum(r[2]["invoices"] for r in runs)
got = h.total(s, "billing_invoices_total")
bt.check(got == want, "invoices over both runs: exporter %d == rows %d" % (got, want))
want = sum(r[1]["responses"] for r in runs)
got = h.total(s, "billing_requests_total")
bt.check(got == want, "requests over both runs: exporter %d == responses %d" % (got, want))
want = sum(r[2]["approved"] for r in runs)
got = h.total(s, "billing_payments_total", outcome="approved")
bt.check(got == want, "approved payments over both runs: %d == %d" % (got, want))
bt.check(h.total(s, "billing_exporter_target_up", target="binary:" + billingd) == 1, "binary target up")
bt.check(rc == 0, "exporter exits 0 on SIGTERM")
bt.finish()

#!/usr/bin/env python3
"""--binary mode: `billing-exporter --binary billingd`, as the README says,
attached before any billingd runs, counts a service started after it, and
the same service restarted, without being restarted itself; the
semaphores of the new processes are raised by the kernel as they map the
file.

billingd links libbillingprobes.so, as a user's service does: its business
probes are in the executable, the timing helpers' (request-*, ...) in the
library.  The one --binary counts both, exactly, and only in billingd's
processes: another program mapping the same library file
(exporter_prefork_other) fires as many requests through it during each
run, and none of them counts.  On the code before, `--binary billingd`
alone counted 0 requests; with `--binary LIB` added, the other program's
requests too.  billingd, the other program and the library are the test's
own copies (exportertest.private_programs): --binary attaches to files no
other test's process maps."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "billingd"))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402
from billingdtest import Billingd, run_load  # noqa: E402  (tests/billingd/billingdtest.py)

h.require_exporter_can_run()
exe, tool = h.env_path("BX_EXPORTER"), h.env_path("BX_TOOL")
load_exe = h.env_path("BX_BILLING_LOAD")
own = tempfile.mkdtemp(prefix="bx-binary-mode-")
atexit.register(shutil.rmtree, own, ignore_errors=True)
(billingd, other), library = h.private_programs(own, h.env_path("BX_BILLINGD"), h.env_path("BX_PREFORK_OTHER"))
OTHER_REQUESTS = 2 * 2 * 1000  # exporter_prefork_other 2 2 1000


def maps_library(pid):
    """Does process pid map the library billingd was built against?"""
    with open("/proc/%d/maps" % pid) as f:
        paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    return any(p.startswith("/") and os.path.exists(p) and os.path.samefile(p, library) for p in paths)


def other_program():
    """exporter_prefork_other, waiting for its go, mapping the library."""
    proc = subprocess.Popen([other, "2", "2", "1000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    if line[:2] != ["ready", "pid"]:
        raise RuntimeError("exporter_prefork_other: %r" % line)
    return proc


def other_fired(proc):
    words = proc.stdout.readline().split()
    return dict(w.split("=") for w in words[1:]) if words[:1] == ["fired"] else words


exporter = h.Exporter(exe, "--binary", billingd)
runs = []
try:
    for seed in ("3", "4"):  # started after the exporter, then restarted
        svc = Billingd(billingd, "--gateway-latency-ms", "0", "--threads", "2")
        rival = None
        try:
            rival = other_program()
            traced = h.semaphores(tool, svc.pid).get("payment__auth", [])
            bt.check(maps_library(svc.pid) and maps_library(rival.pid),
                     "run %d: billingd and the other program map %s" % (len(runs) + 1, library))
            rival.stdin.write("go\n")
            rival.stdin.flush()
            rc, load, _ = run_load(load_exe, svc.url, "--duration", "2", "--concurrency", "4",
                                   "--seed", seed)
            fired = other_fired(rival)
            svc.stop()
            runs.append((rc, load, svc.counts(), traced, fired))
        finally:
            bt.kill_all(rival)
            svc.cleanup()
    s = exporter.samples()
finally:
    rc, out = exporter.stop()

for i, (load_rc, load, rows, traced, fired) in enumerate(runs):
    bt.check(load_rc == 0 and load["invoices_created"] > 0, "run %d: load ran (%d invoices)"
             % (i + 1, load["invoices_created"]))
    bt.check(traced == ["yes"], "run %d: its semaphore raised by the kernel at exec: %s" % (i + 1, traced))
    bt.check(rows["invoices"] == load["invoices_created"], "run %d: rows == load" % (i + 1))
    bt.check(fired == {"requests": str(OTHER_REQUESTS), "invoices": str(OTHER_REQUESTS)},
             "run %d: the other program fired %d requests through the library meanwhile (%s)"
             % (i + 1, OTHER_REQUESTS, fired))
want = sum(r[1]["responses"] for r in runs)
got = h.total(s, "billing_requests_total")
bt.check(got == want, "requests over both runs (in libbillingprobes.so): exporter %d == billingd's responses %d, "
         "none of the other program's %d" % (got, want, 2 * OTHER_REQUESTS))
bt.check(h.total(s, "billing_requests_total", handler="prefork.invoice") == 0,
         "no request of the other program's handler counted")
for metric, labels, row in (("billing_invoices_total", {}, "invoices"),
                            ("billing_payments_total", {"outcome": "approved"}, "approved"),
                            ("billing_payments_total", {"outcome": "declined"}, "declined"),
                            ("billing_refunds_total", {}, "refunds")):
    want = sum(r[2][row] for r in runs)
    got = h.total(s, metric, **labels)
    bt.check(got == want, "%s over both runs: exporter %d == rows %d" % (row, got, want))
bt.check(h.total(s, "billing_exporter_target_up", target="binary:" + billingd) == 1, "binary target up")
bt.check(rc == 0, "exporter exits 0 on SIGTERM")
bt.finish()

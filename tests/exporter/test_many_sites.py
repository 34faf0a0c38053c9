#!/usr/bin/env python3
"""5,000 probe sites in one file (many_sites.c): the exporter attached with
--pid counts every fire of every site exactly, twice over, raises the
semaphore while attached, exits 0 on SIGTERM, and the semaphore is back to
0 once it has gone.  (How long start-up and shutdown take is
bench/exporter_sites_bench.py's figure, not a bound here.)"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe, tool, program = h.env_path("BX_EXPORTER"), h.env_path("BX_TOOL"), h.env_path("BX_MANY_SITES")
SITES = 5000

prog = h.FireProgram(program)
ex = None
try:
    ex = h.Exporter(exe, "--pid", str(prog.pid), "--metrics", "business")
    bt.check(set(h.semaphores(tool, prog.pid).get("invoice__create", [])) == {"yes"},
             "the invoice-create semaphore is raised while attached")
    for round_ in (1, 2):
        prog.proc.stdin.write("go\n")
        prog.proc.stdin.flush()
        line = prog.proc.stdout.readline().strip()
        bt.check(line == "fired %d" % SITES, "round %d: the program fired its %d sites (%r)" % (round_, SITES, line))
        s = ex.samples()
        got = h.total(s, "billing_invoices_total", currency="USD")
        bt.check(got == round_ * SITES, "round %d: billing_invoices_total{currency=USD} = %d (got %s)"
                 % (round_, round_ * SITES, got))
    rc, out = ex.stop()
    ex = None
    bt.check(rc == 0, "the exporter exits 0 on SIGTERM (rc=%s)" % rc)
    bt.check(set(h.semaphores(tool, prog.pid).get("invoice__create", [])) == {"no"},
             "the semaphore is back to 0 once the exporter has gone")
finally:
    if ex:
        ex.stop()
    prog.release()
bt.finish()

#!/usr/bin/env python3
"""Many threads firing the same label set at full speed: the exporter's
totals equal what was fired, exactly (per-CPU maps lose no increment)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
THREADS, EACH = 8, 25000

fired, s, _, rc = h.fire_and_scrape(exe, fire, ["threads", str(THREADS), str(EACH)])

want = THREADS * EACH
bt.check(fired["request_done"] == want, "the program fired %d request-done" % want)
got = h.total(s, "billing_requests_total", handler="threads.same", status="0")
bt.check(got == want, "billing_requests_total = %d (got %d)" % (want, got))
got = h.total(s, "billing_request_duration_seconds_count", handler="threads.same")
bt.check(got == want, "billing_request_duration_seconds_count = %d (got %d)" % (want, got))
got = h.total(s, "billing_request_duration_seconds_sum", handler="threads.same")
bt.check(abs(got - want * 1e-6) < 1e-6, "duration sum = %d us (got %r s)" % (want, got))
got = h.total(s, "billing_payments_total", gateway="threads-gw", outcome="approved")
bt.check(got == want, "billing_payments_total approved = %d (got %d)" % (want, got))
got = h.total(s, "billing_payment_amount_minor_total", gateway="threads-gw")
bt.check(got == want * 100, "payment amount = %d (got %d)" % (want * 100, got))
bt.check(h.total(s, "billing_exporter_dropped_fires_total") == 0, "no fire dropped")
bt.check(rc == 0, "exporter exits 0 on SIGTERM (%s)" % rc)
bt.finish()

#!/usr/bin/env python3
"""A service built with -Wl,--no-as-needed against libbillingprobes.so
fires request-start/done through the timing helpers (the library's
notes) and through its own macros (the program's notes): the exporter
attaches both modules and counts every fire once."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_SHARED")
N = 1000

fired, s, _, _ = h.fire_and_scrape(exe, fire, ["spans", str(N)])

bt.check(h.total(s, "billing_exporter_probes_attached", probe="request__done") == 2,
         "request__done attached in 2 modules")
bt.check(h.total(s, "billing_requests_total", handler="spans.helper") == fired["helper"],
         "helper fires counted once: %d" % fired["helper"])
bt.check(h.total(s, "billing_requests_total", handler="spans.macro") == fired["macro"],
         "macro fires counted once: %d" % fired["macro"])
helper_dur = h.total(s, "billing_request_duration_seconds_count", handler="spans.helper")
bt.check(helper_dur == N, "helper durations measured with only -done attached: %d" % helper_dur)
bt.finish()

#!/usr/bin/env python3
"""billingd with stats times payment-auth and its gateway call with one clock
pair: they measure the same interval, so each payment-auth duration is the
gateway-call-done (authorize) duration of the same call, and the two
histograms' sums are equal to the nanosecond."""
import os
import shutil
import sys
import tempfile

import statstest as st
from statstest import bt

sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
sys.path.insert(0, os.path.join(st.HERE, "..", "billingd"))
import exportertest as h  # noqa: E402
from billingdtest import Billingd  # noqa: E402  (tests/billingd/billingdtest.py)

PAYMENTS = 5

st.require_built()
billingd_exe = h.env_path("BS_BILLINGD")


def duration_sum(seg, map_name, labels=None):
    first, _ = st.cells_layout(map_name)["duration_ns"]
    return sum(r["cells"][first + 1] for r in st.rows(seg, map_name)
               if labels is None or r["labels"][:len(labels)] == labels)


base = tempfile.mkdtemp(prefix="billing-stats-shared-clock-")
env = dict(os.environ, BILLING_STATS_DIR=os.path.join(base, "segments"))
svc = Billingd(billingd_exe, "--threads", "1", "--gateway-latency-ms", "1", env=env)
try:
    status, inv, _ = svc.request("POST", "/invoices",
                                 {"customer_id": 1, "amount_minor": 100 * PAYMENTS, "currency": "EUR"})
    bt.check(status == 201, f"invoice created ({status})")
    for _ in range(PAYMENTS):
        status, _, _ = svc.request("POST", "/payments/authorize",
                                   {"invoice_id": inv["id"], "amount_minor": 100, "currency": "EUR",
                                    "gateway": "stripe-sim"})
        bt.check(status == 201, f"payment recorded ({status})")
    code, out = svc.stop()
    bt.check(code == 0, f"billingd exited 0 ({code}: {out[-300:]})")
    paths = [os.path.join(base, "segments", n) for n in os.listdir(os.path.join(base, "segments"))]
    segs = st.dump(paths)
    bt.check(len(segs) == 1 and "error" not in segs[0], f"one segment read ({len(segs)}: {segs[0].get('error', '') if segs else ''})")
    seg = segs[0]
    auth = duration_sum(seg, "m_payment_auth")
    gateway = duration_sum(seg, "m_gateway_call_done", ["stripe-sim", "authorize"])
    count = sum(r["cells"][0] for r in st.rows(seg, "m_payment_auth"))
    bt.check(count == PAYMENTS, f"{PAYMENTS} payment-auth counted ({count})")
    bt.check(auth > 0 and auth == gateway,
             f"payment-auth durations sum to the gateway calls' ({auth} ns vs {gateway} ns)")
finally:
    svc.cleanup()
    shutil.rmtree(base, ignore_errors=True)
bt.finish()

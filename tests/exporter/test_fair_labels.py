#!/usr/bin/env python3
"""Bounded labels are fair on the BPF path (issue 20, finding 6): known
currencies (provider/iso4217.txt) keep their own series whatever else a
service sends, a full map never loses a known currency's fires, and what
is shown as "other" is counted per label.

tests/exporter/fair_labels.c fires, between scrapes: 179 ISO codes (more
than a label's 64 values); then GBP and CHF, first seen after them; then
20,000 distinct junk currencies through three probes (more than a map's
16384 label sets) and USD, GBP and CHF with known amounts
(tests/lib/fair_labels.h)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
promtool = bt.require_program("promtool", "prometheus")
exe, fair, codes_path = h.env_path("BX_EXPORTER"), h.env_path("BX_FAIR_LABELS"), h.env_path("BX_KNOWN_CURRENCIES")
JUNK = 20000
codes = [l.split("#")[0].strip() for l in open(codes_path)]
codes = [c for c in codes if c]
# tests/lib/fair_labels.h: fair_real[]
REAL = {"USD": dict(invoices=3, invoice_amount=1000, approved=4, approved_amount=500, declined=1,
                    declined_amount=700, refunds=2, refund_amount=250),
        "GBP": dict(invoices=1, invoice_amount=4000, approved=2, approved_amount=300, declined=0,
                    declined_amount=0, refunds=1, refund_amount=100),
        "CHF": dict(invoices=1, invoice_amount=5000, approved=0, approved_amount=0, declined=1,
                    declined_amount=900, refunds=1, refund_amount=50)}
LATE = {"GBP": (2, 2000), "CHF": (1, 3000)}  # step 2: invoices, their amount
early = [c for c in codes if c not in REAL]


def step(prog):
    prog.proc.stdin.write("go\n")
    prog.proc.stdin.flush()
    return prog.fired()


def by_label(samples, name, label):
    out = {}
    for (n, labels), v in samples.items():
        if n == name:
            k = dict(labels).get(label)
            out[k] = out.get(k, 0) + v
    return out


prog = h.FireProgram(fair, codes_path, str(JUNK))
ex = None
try:
    ex = h.Exporter(exe, "--pid", str(prog.pid))
    first = prog.fired()
    s1 = ex.samples()
    step(prog)
    s2 = ex.samples()
    third = step(prog)
    _, text3 = ex.metrics()
finally:
    if ex:
        ex.stop()
    prog.release()
s3 = h.parse_exposition(text3)

bt.check(first["invoices"] == len(early) and len(early) >= 157,
         "step 1 fired %d ISO codes (%d known)" % (first["invoices"], len(codes)))
inv1 = by_label(s1, "billing_invoices_total", "currency")
bt.check(all(inv1.get(c) == 1 for c in early) and "other" not in inv1,
         "%d ISO codes after start: each its own series, none 'other' (%d series)" % (len(early), len(inv1)))
inv2 = by_label(s2, "billing_invoices_total", "currency")
for c, (n, amount) in LATE.items():
    got = inv2.get(c)
    bt.check(got == n, "%s first seen after %d other codes keeps its own series: %s invoices (want %d)"
             % (c, len(early), got, n))

# --- after 20,000 junk currencies --------------------------------------------
bt.check(third["junk"] == JUNK, "fired %d junk currencies per probe" % third["junk"])
inv = by_label(s3, "billing_invoices_total", "currency")
inv_amount = by_label(s3, "billing_invoice_amount_minor_total", "currency")
for c, r in REAL.items():
    late_n, late_amount = LATE.get(c, (0, 0))
    n, amount = r["invoices"] + late_n, r["invoices"] * r["invoice_amount"] + late_n * late_amount
    bt.check(inv.get(c) == n and inv_amount.get(c) == amount,
             "%s invoices after the junk: %s, amount %s (want %d, %d)" % (c, inv.get(c), inv_amount.get(c), n, amount))
    for outcome in ("approved", "declined"):
        want_n, want_sum = r[outcome], r[outcome] * r[outcome + "_amount"]
        got_n = h.total(s3, "billing_payments_total", currency=c, outcome=outcome)
        got_sum = h.total(s3, "billing_payment_amount_minor_total", currency=c, outcome=outcome)
        bt.check(got_n == want_n and got_sum == want_sum, "%s payments %s: %d, amount %d (want %d, %d)"
                 % (c, outcome, got_n, got_sum, want_n, want_sum))
    got_n = h.total(s3, "billing_refunds_total", currency=c)
    got_sum = h.total(s3, "billing_refund_amount_minor_total", currency=c)
    want_n, want_sum = r["refunds"], r["refunds"] * r["refund_amount"]
    bt.check(got_n == want_n and got_sum == want_sum, "%s refunds: %d, amount %d (want %d, %d)"
             % (c, got_n, got_sum, want_n, want_sum))
bt.check(all(inv.get(c) == 1 for c in early), "every early ISO code still its own series, 1 invoice each")

junk_re = re.compile(r"j\d{5}$")
for name, m, label in [("billing_invoices_total", "m_invoice_create", "currency"),
                       ("billing_payments_total", "m_payment_auth", "currency"),
                       ("billing_payments_total", "m_payment_auth", "gateway"),
                       ("billing_refunds_total", "m_refund_process", "currency"),
                       ("billing_refunds_total", "m_refund_process", "reason")]:
    shown = by_label(s3, name, label)
    folded = h.total(s3, "billing_exporter_folded_fires_total", map=m, label=label)
    bt.check(folded == shown.get("other", 0), "%s{%s}: folded fires %d == its 'other' series %d"
             % (m, label, folded, shown.get("other", 0)))
    dropped = h.total(s3, "billing_exporter_dropped_fires_total", map=m)
    bt.check(dropped == 0, "%s: no fire dropped (%d)" % (m, dropped))
    if label == "currency":
        kept = {k: v for k, v in shown.items() if k and junk_re.match(k)}
        bt.check(len(kept) <= 64, "%s: at most 64 junk currencies shown (%d)" % (m, len(kept)))
        bt.check(sum(kept.values()) + folded == JUNK,
                 "%s: junk fires shown + folded == sent: %d + %d == %d" % (m, sum(kept.values()), folded, JUNK))
        bt.check(folded >= JUNK - 64, "%s: the junk past 64 values folded (%d)" % (m, folded))
        distinct = h.total(s3, "billing_exporter_label_values_folded_total", map=m, label=label)
        bt.check(0 < distinct <= JUNK - len(kept), "%s: distinct values folded in user space: %d" % (m, distinct))
total_invoices = sum(inv.values())
want = len(early) + 3 + JUNK + sum(r["invoices"] for r in REAL.values())
bt.check(total_invoices == want, "every invoice counted: %d (want %d)" % (total_invoices, want))
total_payments = h.total(s3, "billing_payments_total")
want = JUNK + sum(r["approved"] + r["declined"] for r in REAL.values())
bt.check(total_payments == want, "every payment counted: %d (want %d)" % (total_payments, want))

p = subprocess.run([promtool, "check", "metrics"], input=text3, capture_output=True, text=True)
bt.check(p.returncode == 0, "promtool check metrics passes: " + (p.stdout + p.stderr).strip())
bt.finish()

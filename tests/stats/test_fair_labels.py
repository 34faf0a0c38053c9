#!/usr/bin/env python3
"""Bounded labels are fair in a stats segment (issue 20, finding 6): known
currencies (provider/iso4217.txt) take no room among a label's 64 values
and keep their own rows past the map's general rows, so 179 ISO codes
leave GBP and CHF their own series and 20,000 junk currencies lose no
known currency's fires; what is shown as "other" is the junk alone, and
billing-exporter (when built) counts it per label.  The fires:
tests/lib/fair_labels.h, through stats_workload fair."""
import os
import re
import shutil
import tempfile

import statstest as st
from statstest import bt

st.require_built()
JUNK = 20000
codes_path = os.environ.get("BS_KNOWN_CURRENCIES", os.path.join(bt.SOURCE_ROOT, "provider", "iso4217.txt"))
codes = [c for c in (l.split("#")[0].strip() for l in open(codes_path)) if c]
# tests/lib/fair_labels.h: fair_real[], and fire_late_known()'s invoices
REAL = {"USD": (3, 1000, 4, 500, 1, 700, 2, 250), "GBP": (1, 4000, 2, 300, 0, 0, 1, 100),
        "CHF": (1, 5000, 0, 0, 1, 900, 1, 50)}
LATE = {"GBP": (2, 2000), "CHF": (1, 3000)}
early = [c for c in codes if c not in REAL]
VALUE, FOLDED, OVERFLOW = 0, 1, 2  # stats_read.h BS_FIELD_*
junk_re = re.compile(r"j\d{5}$")

d = tempfile.mkdtemp(prefix="billing-stats-fair-")
try:
    p = st.run(["fair", codes_path, JUNK], {"BILLING_STATS_DIR": d})
    segs = st.segments(p.stdout)
    seg = st.dump([segs[0][1]])[0] if segs and segs[0][1] else {"error": "no segment: " + p.stderr.strip()}
    bt.check(p.returncode == 0 and "error" not in seg, f"fair: ran and read ({seg.get('error')})")
    if "error" in seg:
        bt.finish()

    def by_currency(map_name, field, outcome_field=None):
        """{(currency, approved?): [fires, amount sum]}; folded currencies as "other"."""
        lay = st.cells_layout(map_name)
        out = {}
        for r in st.rows(seg, map_name):
            if OVERFLOW in r["state"]:
                bt.check(False, f"{map_name}: no overflow row ({r['labels']}: {r['cells'][0]} fires)")
            cur = r["labels"][field] if r["state"][field] == VALUE else "other"
            ok = None
            if outcome_field is not None:
                ok = r["state"][outcome_field] == VALUE and r["ints"][outcome_field] == 0
            e = out.setdefault((cur, ok), [0, 0])
            e[0] += r["cells"][0]
            e[1] += st.u64_signed(r["cells"][lay["amount_minor"][0] + 1])
        return out

    inv = by_currency("m_invoice_create", 0)
    pay = by_currency("m_payment_auth", 1, 2)
    ref = by_currency("m_refund_process", 1)
    bt.check(len(early) >= 157 and all(inv.get((c, None), [0])[0] == 1 for c in early),
             f"{len(early)} ISO codes: each its own row, 1 invoice")
    for c, (n_inv, a_inv, n_ok, a_ok, n_no, a_no, n_ref, a_ref) in REAL.items():
        late_n, late_a = LATE.get(c, (0, 0))
        want = [n_inv + late_n, n_inv * a_inv + late_n * late_a]
        bt.check(inv.get((c, None)) == want, f"{c} invoices after 179 codes and {JUNK} junk: {inv.get((c, None))} "
                 f"(want {want})")
        for approved, n, a in ((True, n_ok, a_ok), (False, n_no, a_no)):
            got = pay.get((c, approved), [0, 0])
            bt.check(got == [n, n * a], f"{c} payments {'approved' if approved else 'declined'}: {got} "
                     f"(want {[n, n * a]})")
        bt.check(ref.get((c, None)) == [n_ref, n_ref * a_ref], f"{c} refunds: {ref.get((c, None))}")
    for name, got in (("invoices", inv), ("payments", pay), ("refunds", ref)):
        kept = sum(v[0] for (c, _), v in got.items() if junk_re.match(c))
        kept_n = len({c for (c, _) in got if junk_re.match(c)})
        other = sum(v[0] for (c, _), v in got.items() if c == "other")
        bt.check(kept_n <= 64 and kept + other == JUNK,
                 f"{name}: junk shown ({kept_n} values, {kept} fires) + folded ({other}) == sent ({JUNK})")
    # Folded currencies share one row per gateway and outcome: the map never
    # fills, so the gateway is never folded.
    bt.check(all(r["state"][0] == VALUE and r["labels"][0] == "gw-fair" for r in st.rows(seg, "m_payment_auth")),
             "payments: the gateway kept on every row")

    # billing-exporter on the segment: the same figures, and "other" counted per label.
    exe = os.environ.get("BX_EXPORTER")
    if exe and os.path.exists(exe):
        import sys
        sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
        import exportertest as h  # noqa: E402
        ex = h.Exporter(exe, "--stats-dir", d)
        try:
            s = ex.samples()
        finally:
            ex.stop()
        for c in ("USD", "GBP", "CHF"):
            bt.check(h.total(s, "billing_invoices_total", currency=c) == inv.get((c, None), [None])[0],
                     f"exporter: {c} invoices {h.total(s, 'billing_invoices_total', currency=c)}")
        for m, metric, label in (("m_invoice_create", "billing_invoices_total", "currency"),
                                 ("m_payment_auth", "billing_payments_total", "currency"),
                                 ("m_payment_auth", "billing_payments_total", "gateway"),
                                 ("m_refund_process", "billing_refunds_total", "currency")):
            folded = h.total(s, "billing_exporter_folded_fires_total", map=m, label=label)
            other = h.total(s, metric, **{label: "other"})
            bt.check(folded == other, f"exporter: {m}{{{label}}} folded fires {folded} == 'other' series {other}")
        bt.check(h.total(s, "billing_exporter_folded_fires_total", map="m_invoice_create", label="currency")
                 >= JUNK - 64, "exporter: the junk currencies past 64 counted as folded")
finally:
    shutil.rmtree(d, ignore_errors=True)
bt.finish()

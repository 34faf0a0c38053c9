#!/usr/bin/env python3
"""The stats writer's first-level cache (label arguments by address) never
counts a fire under another label: a reused stack or heap buffer whose
bytes change (also only at the end) is counted under its new bytes; equal
labels at many addresses and call sites land in one row; 8 threads exact;
and both paths' bucket searches (a literal's hits, a buffer's key-bytes
path) put every value at, above and below each bound and power of two
where the BPF programs' linear search does."""
import os
import tempfile

import statstest as st
from statstest import bt

PROGRAM = os.environ.get("BS_LABEL_CACHE", "")
THREADS, N = 8, 3000
SITE_LABELS = ["site-x", "site-x", "site-y", "site-y", "site-z", "site-z", "site-x", "site-x", "site-y", "site-y",
               "site-z", "site-z", "site-x", "site-x", "site-z", "site-y", "site-z", "site-z", "site-x", "site-x",
               "site-y", "site-y", "site-z", "site-z"]  # label_cache.c many_sites(), site k


def expected_errors():
    out = {}

    def add(label, code, n=1):
        out[(label, code)] = out.get((label, code), 0) + n * THREADS
    for i in range(N):
        add("reuse-b" if (i // 3) % 2 else "reuse-a", 1)
        add(f"prefix-same-xx-{2 if i % 2 else 1}", 2)
        add("heap-b" if (i // 5) % 2 else "heap-a", 3)
        for k, label in enumerate(SITE_LABELS):
            add(label, 4 + k % 3)
    return out


def values():
    """(amount, duration) pairs at, beside and between every bound, at powers of two, and the extremes."""
    amounts, durations = {0, 1, -1, -100, -(1 << 63), (1 << 63) - 1}, {0, 1, (1 << 64) - 1, (1 << 63)}
    for name, out, lo, hi in (("amount_minor", amounts, -(1 << 63), (1 << 63) - 1),
                              ("duration_ns", durations, 0, (1 << 64) - 1)):
        near = [b + d for b in st.METRICS.quantities[name].bounds_raw for d in (-1, 0, 1)]
        near += [(1 << k) + d for k in range(64) for d in (-1, 0, 1)]
        out.update(v for v in near if lo <= v <= hi)
    amounts, durations = sorted(amounts), sorted(durations)
    n = max(len(amounts), len(durations))
    return [(amounts[i % len(amounts)], durations[i % len(durations)]) for i in range(n)]


if not PROGRAM or not os.path.exists(PROGRAM):
    bt.skip("BS_LABEL_CACHE not built (run through meson test)")
st.require_built()
with tempfile.TemporaryDirectory() as tmp:
    vals = values()
    vpath = os.path.join(tmp, "values")
    with open(vpath, "w") as f:
        f.writelines(f"{a} {d}\n" for a, d in vals)
    p = st.subprocess.run([PROGRAM, str(THREADS), str(N), vpath], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, BILLING_STATS_DIR=os.path.join(tmp, "stats")))
    segs = st.segments(p.stdout)
    seg = st.dump([segs[0][1]])[0] if p.returncode == 0 and segs and segs[0][1] else {"error": p.stderr.strip()}
    bt.check("error" not in seg, f"label_cache ran, its segment read ({seg.get('error')})")
    if "error" in seg:
        bt.finish()

    got = {(r["labels"][0], r["ints"][1]): r["cells"][0] for r in st.rows(seg, "m_error")}
    want = expected_errors()
    for key in sorted(want):
        bt.check(got.get(key) == want[key], f"error {key}: {got.get(key)} == {want[key]} fires")
    bt.check(set(got) == set(want), f"no error row under a label never fired ({sorted(set(got) - set(want))})")

    lay = st.cells_layout("m_payment_auth")
    for gateway, path in (("gw-lit", "the first level's hit"), ("gw-buf", "the key-bytes path")):
        pay = [r for r in st.rows(seg, "m_payment_auth") if r["labels"][0] == gateway]
        bt.check(len(pay) == 1, f"one payment-auth row for {gateway} ({len(pay)})")
        if not pay:
            continue
        c = pay[0]["cells"]
        fired = [(1, 1)] + vals
        bt.check(c[0] == THREADS * len(fired), f"{gateway}: payment-auth fires {c[0]} == {THREADS * len(fired)}")
        for q, pick in (("amount_minor", 0), ("duration_ns", 1)):
            first, n = lay[q]
            want_b = [0] * n
            for v in fired:
                b = st.bucket(q, v[pick])
                if b is not None:
                    want_b[b] += THREADS
            bad = [(i, c[first + 2 + i], w) for i, w in enumerate(want_b) if c[first + 2 + i] != w]
            bt.check(not bad, f"{gateway}, {path}: {q} every bucket exact over {len(fired)} values x {THREADS} "
                              f"threads (bucket, got, want: {bad[:4]})")
            bt.check(c[first] == sum(want_b), f"{gateway}: {q} observations {c[first]} == {sum(want_b)}")
bt.finish()

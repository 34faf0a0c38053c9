#!/usr/bin/env python3
"""The native histograms' bucket index (bx_native_index_<quantity>, the
integer-only one billing_metrics_layout.h generates) against the exact
one (provider/native.py's big-integer index): at and beside every power
of two, at and beside every bucket bound (floor(divide * 2^(i / 2^S))) of the range, at the range's
ends, below 0 and at the type's extremes.  The schema and range the
header says are the ones billing.d declares."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

sys.path.insert(0, os.path.join(bt.SOURCE_ROOT, "provider"))
import native  # noqa: E402

SIGNED = {"duration_ns": False, "amount_minor": True}


def declared():
    """billing.d's @@native lines, parsed as the generator parses them."""
    out, divide = {}, {}
    with open(bt.PROVIDER_D) as f:
        for line in f:
            m = re.match(r"\s*\*\s*@@quantity\s+(\w+)\s.*\bdivide=(\d+)", line)
            if m:
                divide[m.group(1)] = int(m.group(2))
            m = re.match(r"\s*\*\s*@@native\s+(\w+)\s+(.*)$", line)
            if m:
                opts = dict(w.split("=", 1) for w in m.group(2).split())
                out[m.group(1)] = native.parse([m.group(1)], line, bt.PROVIDER_D, opts, divide[m.group(1)])
    return out


def values(q, n):
    lo, hi = (-(1 << 63), (1 << 63) - 1) if SIGNED[q] else (0, (1 << 64) - 1)
    v = {lo, hi, -1, 0, 1, 2, 3}
    for k in range(64):
        v |= {(1 << k) + d for d in (-2, -1, 0, 1, 2)}
    for b in n.bounds():  # every bucket bound of the range, and beside it
        v |= {b - 1, b, b + 1}
    return sorted(x for x in v if lo <= x <= hi)


def main():
    exe = sys.argv[1]
    decl = declared()
    bt.check(set(decl) == set(SIGNED), "billing.d declares native histograms of %s" % ", ".join(sorted(SIGNED)))
    lines = ["%s %d" % (q, x) for q in sorted(decl) for x in values(q, decl[q])]
    out = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    bt.check(out.returncode == 0, "native_index ran (%s)" % out.stderr.strip())
    rows = out.stdout.splitlines()
    for q, n in sorted(decl.items()):
        bt.check("native %s %d %d %d" % (q, n.schema, n.low, n.high) in rows,
                 "%s: the header's schema %d, range 2^%d..2^%d are billing.d's" % (q, n.schema, n.low, n.high))
    wrong = []
    seen = 0
    for row in rows:
        w = row.split()
        if w[0] == "native":
            continue
        q, x, got = w[0], int(w[1]), int(w[2])
        seen += 1
        want = native.index(x, decl[q])
        if got != want:
            wrong.append("%s %d: index %d, exact %d" % (q, x, got, want))
    bt.check(seen == len(lines), "an index for each of the %d values" % len(lines))
    bt.check(not wrong, "every index is the exact one" + "".join("\n  " + w for w in wrong[:10]))
    bt.finish()


main()

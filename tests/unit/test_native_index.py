#!/usr/bin/env python3
"""The native histograms' bucket index (bx_native_index_<quantity>, the
integer-only one billing_metrics_layout.h generates) against the exact
one (provider/native.py's big-integer index): at and up to 2 beside every
power of two, at and up to 2 beside every bucket bound (floor(divide *
2^(i / 2^S))) of the range, at the range's ends, below 0, at the type's
extremes and at 50,000 values drawn at random (a fixed seed) over every
power of two.  The schema and range the header says are the ones
billing.d declares, and the index the header generates takes no search
and no floating point: a table row by the leading zeros, a cell by the
bits below the leading one, and one compare.

  test_native_index.py NATIVE_INDEX_PROGRAM BILLING_METRICS_LAYOUT_H"""
import os
import random
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
        v |= {b + d for d in (-2, -1, 0, 1, 2)}
    rng = random.Random(44)
    for _ in range(RANDOM):
        x = rng.getrandbits(rng.randrange(1, 65))
        v.add(-x if SIGNED[q] and rng.random() < 0.05 else x)
    return sorted(x for x in v if lo <= x <= hi)


RANDOM = 25000  # per quantity


def index_code(header, q):
    """The bodies of the generated bx_native_index_pos_<q> and
    bx_native_index_<q>."""
    text = open(header).read()
    bodies = []
    for name in ("bx_native_index_pos_" + q, "bx_native_index_" + q):
        m = re.search(r"BX_INLINE \w+ " + name + r"\(([^)]*)\)\n\{\n(.*?)\n\}\n", text, re.S)
        bodies.append(m.group(2) if m else None)
    return bodies


def check_no_search(header, q):
    pos, whole = index_code(header, q)
    bt.check(pos is not None and whole is not None, "%s: the header defines bx_native_index_pos_%s and "
             "bx_native_index_%s" % (q, q, q))
    if pos is None or whole is None:
        return
    code = pos + whole
    bt.check(not re.search(r"\b(for|while|do|goto|double|float)\b|\?", pos) and not re.search(
        r"\b(for|while|do|goto|double|float)\b", whole),
             "%s: no loop and no floating point in the index" % q)
    bt.check(len(re.findall(r"\.t\[", code)) == 1 and len(re.findall(r"\.b\[", code)) == 1,
             "%s: one table lookup and one compare with a bound (no search)" % q)


def main():
    exe, header = sys.argv[1], sys.argv[2]
    decl = declared()
    for q in sorted(SIGNED):
        check_no_search(header, q)
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

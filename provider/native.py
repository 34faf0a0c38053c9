"""Native (exponential-bucket) histograms of a quantity, as Prometheus's
client_model describes them: at schema S, bucket i of the exposed unit
(seconds, minor units) holds the values in (2^((i-1) / 2^S), 2^(i / 2^S)],
so every bucket is 2^(2^-S) times as wide as the one below.

billing.d declares one per quantity that has it:

  @@native ARG schema=S octaves=LOW..HIGH

LOW and HIGH are powers of two of the exposed unit (a duration's
seconds): values up to 2^LOW (and 0) fall in the zero bucket, values past
2^HIGH (and, for a signed quantity, below 0) are counted out of range,
never in a bucket; between them 2^S buckets per power of two.

The writer counts the argument in its own unit (nanoseconds), which the
exposed unit divides by `divide` (10^9): a bucket's bound there is
divide * 2^(i / 2^S), not a power of two.  For an integer x, x <= r holds
exactly when x <= floor(r), so the index is a count of integer bounds
below x: a table of floor(divide * 2^(i / 2^S)), computed here with
integers only, searched without a branch (no floating point, no log).
"""

SCHEMA_MIN, SCHEMA_MAX = 0, 8  # client_model allows -4..8; finer than 2^0 only
BUCKETS_MAX = 4096


class Native:
    def __init__(self, schema, low, high, divide=1):
        self.schema = schema  # 2^schema buckets per power of two
        self.low = low        # values <= 2^low (exposed unit): the zero bucket
        self.high = high      # values > 2^high: out of range
        self.divide = divide  # the argument's unit per exposed unit

    @property
    def per_octave(self):
        return 1 << self.schema

    @property
    def buckets(self):
        return (self.high - self.low) * self.per_octave

    @property
    def first_index(self):
        """client_model's index of our bucket 1."""
        return self.low * self.per_octave + 1

    def bounds(self):
        """floor(divide * 2^(i / 2^S)) for i = low * 2^S .. high * 2^S: our
        bucket k holds the integers x with bounds[k-1] < x <= bounds[k]."""
        return [floor_scaled_power(self.divide, i, self.per_octave)
                for i in range(self.low * self.per_octave, self.high * self.per_octave + 1)]


def floor_scaled_power(d, e, n):
    """floor(d * 2^(e / n)) exactly: the largest m with m^n <= d^n * 2^e."""
    def fits(m):
        return (m ** n << -e) <= d ** n if e < 0 else m ** n <= d ** n << e
    lo, hi = 0, d << (max(e, 0) // n + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def parse(rest, line, path, opts, divide=1):
    """A '@@native ARG schema=S octaves=LOW..HIGH' line's values (opts:
    the parsed KEY=VALUE words); MetricError-free: returns an error text or
    a Native."""
    want = (f"{path}: {line!r}: want @@native ARG schema={SCHEMA_MIN}..{SCHEMA_MAX} octaves=LOW..HIGH "
            f"(-62 <= LOW < HIGH <= 62, at most {BUCKETS_MAX} buckets)")
    if set(opts) != {"schema", "octaves"}:
        return want
    schema, octaves = str(opts["schema"]), str(opts["octaves"]).split("..")

    def integer(t):
        return t.lstrip("-").isdigit() and t.count("-") <= 1 and t[:1] != "+"
    if not schema.isdigit() or not SCHEMA_MIN <= int(schema) <= SCHEMA_MAX:
        return want
    if len(octaves) != 2 or not all(integer(o) for o in octaves):
        return want
    n = Native(int(schema), int(octaves[0]), int(octaves[1]), divide)
    if not -62 <= n.low < n.high <= 62 or n.buckets > BUCKETS_MAX:
        return want
    if n.bounds()[-1] >= 1 << 63:
        return f"{path}: {line!r}: 2^HIGH of the exposed unit must fit the argument (below 2^63)"
    return n


def index(x, native):
    """The exact index (0: zero bucket, 1..buckets, buckets + 1: out of
    range) from the definition, by big-integer arithmetic: the test's
    oracle.  Bucket k holds x when x <= divide * 2^(i / 2^S) for
    i = low * 2^S + k and not for i - 1, i.e. x^n <= divide^n * 2^i."""
    n, d = native.per_octave, native.divide

    def within(i):  # x <= d * 2^(i / n)
        return (x ** n << -i) <= d ** n if i < 0 else x ** n <= d ** n << i
    if x < 0 or not within(native.high * n):
        return native.buckets + 1
    lo, hi = native.low * n, native.high * n  # the first i with within(i)
    if within(lo):
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if within(mid):
            hi = mid
        else:
            lo = mid
    return hi - native.low * n


def window(bounds):
    """For x in [2^j, 2^(j+1)): the bounds below 2^j (all below x), per j,
    and the most bounds any such octave holds (the rest of the search)."""
    below = [sum(1 for b in bounds if b < 1 << j) for j in range(64)]
    most = max(sum(1 for b in bounds if 1 << j <= b < 1 << (j + 1)) for j in range(64))
    return below, most


def layout_h(q, native):
    """The C of quantity q's native histogram for billing_metrics_layout.h
    (outside BPF): its constants and bx_native_index_<q>()."""
    Q = q.name.upper()
    bounds = native.bounds()
    below, most = window(bounds)
    span = 1 << most.bit_length()  # a power of two above the bounds one octave holds
    pad = "INT64_MAX" if q.signed else "UINT64_MAX"
    steps = "".join(f"\ti += (unsigned)(x > b[i + {s - 1}]) * {s}u;\n"
                    for s in (1 << k for k in reversed(range(span.bit_length() - 1))))
    o = [f"/* {q.name}'s native histogram (provider/native.py): schema {native.schema}, each\n"
         f" * bucket 2^(2^-{native.schema}) = {2 ** (2 ** -native.schema):.5f} times the one below; up to\n"
         f" * 2^{native.low} {q.unit} in the zero bucket, past 2^{native.high}{' or below 0' if q.signed else ''}"
         " out of range. */\n",
         f"#define BX_{Q}_NATIVE_SCHEMA {native.schema}\n",
         f"#define BX_{Q}_NATIVE_LOW ({native.low}) /* x <= 2^LOW {q.unit}: the zero bucket */\n",
         f"#define BX_{Q}_NATIVE_HIGH {native.high} /* x > 2^HIGH {q.unit}: out of range */\n",
         f"#define BX_{Q}_NATIVE_BUCKETS {native.buckets}\n",
         f"#define BX_{Q}_NATIVE_CELLS {native.buckets + 2} /* the zero bucket, the buckets, out of range */\n",
         f"#define BX_{Q}_NATIVE_FIRST_INDEX ({native.first_index}) /* client_model's index of bucket 1 */\n",
         "/* 0: the zero bucket; 1 .. BUCKETS: a bucket; BUCKETS + 1: out of range.\n"
         " * The count of bounds below x: those below x's power of two from its\n"
         f" * leading zeros, then a branch-free search of the {most} at most that\n"
         " * power of two holds (the table is padded past its end). */\n",
         f"BX_INLINE unsigned bx_native_index_{q.name}({q.c_type} x)\n{{\n",
         f"\tstatic const {q.c_type} b[{len(bounds) + span}] = {{\n"]
    cells = [str(v) + ("ULL" if not q.signed else "LL") for v in bounds] + [pad] * span
    o += ["\t\t" + ", ".join(cells[i:i + 6]) + ",\n" for i in range(0, len(cells), 6)]
    o.append("\t};\n\tstatic const unsigned short below[64] = {\n"
             + "".join("\t\t" + ", ".join(str(v) for v in below[i:i + 16]) + ",\n" for i in range(0, 64, 16))
             + "\t};\n\tunsigned i;\n\n")
    o.append(f"\tif (x <= 0)\n\t\treturn x == 0 ? 0 : BX_{Q}_NATIVE_BUCKETS + 1;\n" if q.signed else
             "\tif (x == 0)\n\t\treturn 0;\n")
    o.append("\ti = below[63 - __builtin_clzll((bx_u64)x)];\n")
    o.append(steps)
    o.append("\treturn i;\n}\n\n")
    return "".join(o)

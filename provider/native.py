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
integers only, and an index found by table lookup: the octave from the
count of leading zeros, a row of that octave's table by the bits below the
leading one, and one compare (no search, no floating point, no log).
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


MANTISSA_BITS_MIN = 8


def lookup(bounds, mantissa_bits):
    """The bucket index by table, for x >= 1 whose leading one is bit j:
    x's octave is 2^j .. 2^(j+1) - 1, its cell m the mantissa_bits bits
    below its leading one, and a table row per octave gives the count of
    bounds below the smallest x of each cell; one compare with the next
    bound settles the rest.  Returns (rows, t, None) with rows[j] the
    offset in t of octave j's row, or (None, None, why) when a cell holds
    two bounds (then one compare would not settle it).  Octaves with the
    same row share it."""
    import bisect
    cells = 1 << mantissa_bits
    t, offsets, rows = [], {}, []
    for j in range(64):
        row, last = [], 0
        for m in range(cells):
            if j >= mantissa_bits:
                lo = (1 << j) + (m << (j - mantissa_bits))
                hi = lo + (1 << (j - mantissa_bits)) - 1
            elif m % (1 << (mantissa_bits - j)) == 0:
                lo = hi = (1 << j) + (m >> (mantissa_bits - j))
            else:  # no integer has this cell: never looked at
                row.append(last)
                continue
            below, most = bisect.bisect_left(bounds, lo), bisect.bisect_left(bounds, hi)
            if most - below > 1:
                return None, None, f"octave 2^{j}, cell {m}: bounds {below}..{most} in one cell"
            row.append(below)
            last = below
        key = tuple(row)
        if key not in offsets:
            offsets[key] = len(t)
            t.extend(row)
        rows.append(offsets[key])
    return rows, t, None


def mantissa_bits_for(bounds, schema):
    """The fewest mantissa bits (at least MANTISSA_BITS_MIN) whose cells
    hold at most one bound each."""
    why = None
    for bits in range(max(MANTISSA_BITS_MIN, schema + 2), 13):
        rows, t, why = lookup(bounds, bits)
        if rows is not None:
            return bits, rows, t
    raise ValueError(f"native bounds too close for a table lookup: {why}")


def layout_h(q, native, classic_below=None):
    """The C of quantity q's native histogram for billing_metrics_layout.h
    (outside BPF): its constants, bx_native_index_pos_<q>(x, j) for x >= 1
    whose leading one is bit j (the stats writer's hot path calls it with
    the j it already has) and bx_native_index_<q>(x) for any x.  With
    classic_below (metrics.classic_below: the classic bounds below each
    power of two), the classic bounds' tables too, for the stats writer's
    classic bucket (stats_emit.classic_bucket): one base address for both."""
    Q = q.name.upper()
    bounds = native.bounds()
    bits, rows, t = mantissa_bits_for(bounds, native.schema)
    b = [str(v) + "ULL" for v in bounds] + ["UINT64_MAX"]
    word = "unsigned short" if len(t) < 1 << 16 else "unsigned"
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
         f"/* The bounds (b, padded with the largest value), and per octave of x\n"
         f" * (by its leading one's bit) a row of {1 << bits} cells, one per value of the {bits}\n"
         " * bits below x's leading one: the bounds below the cell's smallest\n"
         f" * value.  {len(t) >> bits} distinct rows; a cell holds at most one bound. */\n",
         f"static const struct {{\n\tbx_u64 b[{len(b)}];\n\t{word} row[64];\n\t{word} t[{len(t)}];\n"]
    cb = [f"{v}ULL" for v in q.bounds_raw] + ["UINT64_MAX"]
    if classic_below:
        o.append(f"\tunsigned char below[64]; /* classic bounds below 2^j */\n\tbx_u64 cb[{len(cb)}]; /* the classic bounds */\n")
    o.append(f"}} bx_native_{q.name}_ = {{\n\t{{\n")
    o += ["\t\t" + ", ".join(b[i:i + 6]) + ",\n" for i in range(0, len(b), 6)]
    o.append("\t},\n\t{\n" + "".join("\t\t" + ", ".join(str(v) for v in rows[i:i + 16]) + ",\n"
                                     for i in range(0, 64, 16)) + "\t},\n\t{\n")
    o += ["\t\t" + ", ".join(str(v) for v in t[i:i + 16]) + ",\n" for i in range(0, len(t), 16)]
    if classic_below:
        o.append("\t},\n\t{\n" + "".join("\t\t" + ", ".join(str(v) for v in classic_below[i:i + 16]) + ",\n"
                                         for i in range(0, 64, 16)) + "\t},\n\t{ " + ", ".join(cb) + " }\n};\n")
    else:
        o.append("\t}\n};\n")
    o.append("/* 0: the zero bucket; 1 .. BUCKETS: a bucket; BUCKETS + 1: out of range.\n"
             " * The bounds below x: a row by x's leading one's bit j, a cell by the\n"
             f" * {bits} bits below it (x rotated right by j - {bits}: for j < {bits}, left), and\n"
             " * one compare; no search, no floating point.  x >= 1. */\n"
             f"BX_INLINE bx_u64 bx_native_index_pos_{q.name}(bx_u64 x, bx_u64 j)\n{{\n"
             f"\tunsigned s = (unsigned)(j - {bits}u) & 63u;\n"
             "\tbx_u64 cell = (x >> s) | (x << (-s & 63u)); /* a rotation */\n"
             f"\tbx_u64 i = bx_native_{q.name}_.t[bx_native_{q.name}_.row[j] + (cell & {(1 << bits) - 1}u)];\n\n"
             f"\ti += bx_native_{q.name}_.b[i] < x;\n\treturn i;\n}}\n\n")
    o.append(f"BX_INLINE unsigned bx_native_index_{q.name}({q.c_type} x)\n{{\n")
    o.append(f"\tif (x <= 0)\n\t\treturn x == 0 ? 0 : BX_{Q}_NATIVE_BUCKETS + 1;\n" if q.signed else
             "\tif (x == 0)\n\t\treturn 0;\n")
    o.append(f"\treturn (unsigned)bx_native_index_pos_{q.name}((bx_u64)x, BX_MSB((bx_u64)x));\n}}\n\n")
    return "".join(o)

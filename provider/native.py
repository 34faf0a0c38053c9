"""Native (exponential-bucket) histograms of a quantity, as Prometheus's
client_model describes them: at schema S a bucket's upper bound is
2^(i / 2^S), so every bucket is 2^(2^-S) times as wide as the one below;
bucket i holds the values in (2^((i-1) / 2^S), 2^(i / 2^S)].

billing.d declares one per quantity that has it:

  @@native ARG schema=S octaves=LOW..HIGH

in the argument's own unit: values up to 2^LOW (and 0) fall in the zero
bucket, values past 2^HIGH (and, for a signed quantity, below 0) are
counted out of range, never in a bucket; between them 2^S buckets per
power of two.  The index is integer only: the power of two from the
count of leading zeros, then the value shifted to the top bit compared
with a table of floor(2^(63 + j / 2^S)), which is exact for an integer
(2^(63 + j / 2^S) is irrational for 0 < j < 2^S).
"""

SCHEMA_MIN, SCHEMA_MAX = 0, 8  # client_model allows -4..8; finer than 2^0 only


class Native:
    def __init__(self, schema, low, high):
        self.schema = schema  # 2^schema buckets per power of two
        self.low = low        # values <= 2^low: the zero bucket
        self.high = high      # values > 2^high: out of range

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


def parse(rest, line, path, opts):
    """A '@@native ARG schema=S octaves=LOW..HIGH' line's values (opts:
    the parsed KEY=VALUE words); MetricError-free: returns an error text or
    a Native."""
    want = f"{path}: {line!r}: want @@native ARG schema={SCHEMA_MIN}..{SCHEMA_MAX} octaves=LOW..HIGH (0 <= LOW < HIGH <= 62)"
    if set(opts) != {"schema", "octaves"}:
        return want
    schema, octaves = str(opts["schema"]), str(opts["octaves"]).split("..")
    if not schema.isdigit() or not SCHEMA_MIN <= int(schema) <= SCHEMA_MAX:
        return want
    if len(octaves) != 2 or not all(o.isdigit() for o in octaves):
        return want
    low, high = int(octaves[0]), int(octaves[1])
    if not 0 <= low < high <= 62:
        return want
    return Native(int(schema), low, high)


def iroot(v, n):
    """floor(v ** (1/n)) for integers, exactly."""
    lo, hi = 0, 1 << (v.bit_length() // n + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid ** n <= v:
            lo = mid
        else:
            hi = mid - 1
    return lo


def bounds_table(schema):
    """floor(2^(63 + j / 2^schema)) for j = 1 .. 2^schema - 1: where a
    value shifted to the top bit passes into the next bucket."""
    n = 1 << schema
    return [iroot(1 << (63 * n + j), n) for j in range(1, n)]


def index(x, native):
    """The exact index (0: zero bucket, 1..buckets, buckets + 1: out of
    range) by big-integer arithmetic: the test's oracle and the generator's
    self-check.  Bucket i (client_model's) holds x when x^(2^S) <= 2^i <
    2 * x^(2^S)."""
    if x < 0 or x > 1 << native.high:
        return native.buckets + 1
    if x <= 1 << native.low:
        return 0
    i = (x ** native.per_octave - 1).bit_length()  # smallest i with x^(2^S) <= 2^i
    return i - native.low * native.per_octave


def layout_h(q, native):
    """The C of quantity q's native histogram for billing_metrics_layout.h
    (outside BPF): its constants and bx_native_index_<q>()."""
    Q = q.name.upper()
    table = bounds_table(native.schema)
    steps = "".join(f"\ti += (unsigned)(m > b[i + {s - 1}]) << {s.bit_length() - 1};\n"
                    for s in (1 << k for k in reversed(range(1, native.schema))))
    o = [f"/* {q.name}'s native histogram (provider/native.py): schema {native.schema}, each\n"
         f" * bucket 2^(2^-{native.schema}) = {2 ** (2 ** -native.schema):.5f} times the one below; 0 .. 2^{native.low}\n"
         f" * in the zero bucket, past 2^{native.high}{' or below 0' if q.signed else ''} out of range. */\n",
         f"#define BX_{Q}_NATIVE_SCHEMA {native.schema}\n",
         f"#define BX_{Q}_NATIVE_LOW {native.low} /* x <= 2^LOW: the zero bucket */\n",
         f"#define BX_{Q}_NATIVE_HIGH {native.high} /* x > 2^HIGH: out of range */\n",
         f"#define BX_{Q}_NATIVE_BUCKETS {native.buckets}\n",
         f"#define BX_{Q}_NATIVE_FIRST_INDEX {native.first_index} /* client_model's index of bucket 1 */\n",
         "/* 0: the zero bucket; 1 .. BUCKETS: a bucket; BUCKETS + 1: out of range. */\n",
         f"BX_INLINE unsigned bx_native_index_{q.name}({q.c_type} x)\n{{\n"]
    if table:
        o.append(f"\tstatic const bx_u64 b[{len(table)}] = {{\n"
                 + "".join("\t\t" + ", ".join(f"0x{v:016x}ULL" for v in table[i:i + 3]) + ",\n"
                           for i in range(0, len(table), 3)) + "\t};\n")
    o.append("\tunsigned k, i;\n\tbx_u64 m;\n\n")
    if q.signed:
        o.append(f"\tif (x < 0)\n\t\treturn BX_{Q}_NATIVE_BUCKETS + 1;\n")
    o.append(f"\tif ((bx_u64)x <= (bx_u64)1 << BX_{Q}_NATIVE_LOW)\n\t\treturn 0;\n"
             f"\tif ((bx_u64)x > (bx_u64)1 << BX_{Q}_NATIVE_HIGH)\n\t\treturn BX_{Q}_NATIVE_BUCKETS + 1;\n"
             "\tk = 63u - (unsigned)__builtin_clzll((bx_u64)x);\n"
             "\tm = (bx_u64)x << (63u - k);\n"
             "\t/* 2^k itself closes the bucket below it; past it, the table's\n"
             "\t * bounds under m count the buckets into this power of two. */\n"
             "\ti = (unsigned)(m != (bx_u64)1 << 63);\n")
    if table:
        o.append("\t{\n\t\tunsigned j = 0;\n\n"
                 + steps.replace("\ti +=", "\t\tj +=").replace("b[i +", "b[j +")
                 + "\t\tj += (unsigned)(m > b[j]);\n\t\ti += j;\n\t}\n")
    o.append(f"\treturn (k - BX_{Q}_NATIVE_LOW) * {native.per_octave}u + i;\n}}\n\n")
    return "".join(o)

"""The metrics billing.d's probes feed, read from its "@@" doc lines.

generate.py parses the probes; this module parses what each probe feeds
(billing.d's header says the grammar) and writes what every consumer of a
metric needs from one description:

  billing-metrics-layout-h  billing_metrics_layout.h: C99 and BPF C, no libc.  Per
                     probe that feeds metrics, its key (the label arguments,
                     fixed size) and its value (fires, and per quantity a
                     count, sum and buckets); the bucket bounds in the
                     argument's own unit; one observe function per quantity.
                     The exporter's BPF programs and the stats writer both
                     count through these, so the two paths cannot disagree.
  billing-exporter-programs-h  the BPF maps and one USDT program per feeding probe;
                     beside each map a fold map sized for every folded key
                     (MetricSet.fold_keys), and a map of each label's known
                     values ("@@known", read from a file beside billing.d)
  metric-table-gen-h   the exporter's user-space table: quantities, maps,
                     metric rows (tools/billing-exporter/common/metric_table.c)
"""

import os
import re
import shlex
import string
from decimal import Decimal, InvalidOperation

import native

TYPES_OK_FOR_LABELS = {"char *": "string", "int": "int32"}

# A stats segment's row names a label's value by a byte: a dictionary
# entry below IDX_KNOWN (so "@@label-values N" takes at most that many), a
# known value ("@@known") from IDX_KNOWN to IDX_OVERFLOW - 1, the overflow
# row, "other".  Written here once; billing_metrics_layout.h gives them to
# the C (BS_IDX_*).
IDX_KNOWN, IDX_OVERFLOW, IDX_FOLDED = 64, 254, 255
KNOWN_MAX = IDX_OVERFLOW - IDX_KNOWN
# A label value's room in a segment's dictionary (BS_VALUE_BYTES): the
# most "@@label-bytes" may give a string label.
VALUE_BYTES = 32
# C types of billing.d's argument types, as the generated C declares them.
CTYPE = {"unsigned long long": "uint64_t", "long long": "int64_t", "int": "int32_t", "char *": "const char *"}
HEADER_BANNER = "/* Generated from provider/billing.d by provider/generate.py: do not edit. */\n"


class MetricError(Exception):
    pass


class Quantity:
    def __init__(self, name, unit, divide, unmeasured_zero, signed):
        self.name = name                    # the argument name, e.g. duration_ns
        self.unit = unit                    # the metric's unit, "seconds"
        self.divide = divide                # argument value / divide = value in unit
        self.unmeasured_zero = unmeasured_zero  # 0 means "not measured": never observed
        self.signed = signed
        self.bounds_text = []               # as written in billing.d: the "le" values
        self.bounds_raw = []                # in the argument's unit (integers)
        self.native = None                  # its native histogram (native.Native), if declared

    @property
    def c_type(self):
        return "bx_s64" if self.signed else "bx_u64"


class Label:
    def __init__(self, name, kind, arg=None, nonzero=None, zero=None, constant=None):
        self.name, self.kind, self.arg = name, kind, arg  # kind: value | ternary | constant
        self.nonzero, self.zero, self.constant = nonzero, zero, constant


class Metric:
    def __init__(self, probe, name, mtype, source, quantity, labels, where, help_text):
        self.probe, self.name, self.type = probe, name, mtype
        self.source = source      # count | sum | observe
        self.quantity = quantity  # argument name for sum / observe
        self.labels = labels
        self.where = where        # argument that must be non-zero, or None
        self.help = help_text


class Feed:
    """One probe that feeds metrics: its BPF map / stats table."""

    def __init__(self, probe, group):
        self.probe = probe
        self.group = group
        self.fields = []      # label-bearing argument names, in key order
        self.quantities = []  # quantity argument names, in value order
        self.metrics = []

    @property
    def map_name(self):
        return "m_" + self.probe.func

    @property
    def fold_map_name(self):
        return "f_" + self.probe.func


class Limits:
    """The header's metric groups and label bounds."""

    def __init__(self):
        self.groups = []          # "@@groups": names, in the order the exporter lists them
        self.default_groups = []  # those marked "*"
        self.label_values = None  # "@@label-values N": a label's values before "other"
        self.label_sets = None    # "@@label-sets N": label sets a BPF map holds
        self.slow_default = None  # "@@slow-threshold default=S ...": seconds as written
        self.slow_handlers = {}   # ... HANDLER=S: per handler


class MetricSet:
    def __init__(self, quantities, label_bytes, default_bytes, known, feeds, metrics, limits):
        self.quantities = quantities      # {arg name: Quantity}, declaration order
        self.label_bytes = label_bytes    # {arg name: bytes}
        self.default_bytes = default_bytes
        self.known = known                # {arg name: [values, sorted]}: "@@known"
        self.feeds = feeds                # [Feed] in billing.d's order
        self.metrics = metrics            # [Metric], one family's declarations adjacent
        self.limits = limits              # Limits: groups, label bounds

    def field_bytes(self, arg):
        return self.label_bytes.get(arg, self.default_bytes)

    def fold_keys(self, feed):
        """How many keys a fire of FEED can have once folded (its map full):
        a string field keeps a known value or becomes "other", an int field
        keeps 0 or becomes "other" (non-zero).  The room both paths reserve
        so that a full map never loses a known value's fires."""
        types = {n: t for n, t, _ in feed.probe.args}
        n = 1
        for arg in feed.fields:
            n *= len(self.known.get(arg, [])) + 1 if types[arg] == "char *" else 2
        return n


def header_lines(text):
    """The "@@" lines of billing.d's header (before the provider block)."""
    m = re.search(r"^provider\s+\w+\s*\{", text, re.M)
    head = text[:m.start()] if m else text
    return [re.sub(r"^\s*\*\s?", "", l).strip() for l in head.splitlines()
            if re.match(r"^\s*\*\s*@@", l)]


def parse_options(words, where):
    out = {}
    for w in words:
        k, eq, v = w.partition("=")
        out[k] = v if eq else True
    return out


def read_known(path, arg, name):
    """The values of a "@@known ARG file=NAME" line: NAME beside billing.d,
    one value a line, '#' comments."""
    where = os.path.join(os.path.dirname(os.path.abspath(path)), name)
    try:
        text = open(where, encoding="ascii").read()
    except (OSError, UnicodeDecodeError) as e:
        raise MetricError(f"{path}: @@known {arg}: cannot read {where}: {e}") from None
    values = [l.split("#")[0].strip() for l in text.splitlines()]
    values = [v for v in values if v]
    if len(values) > KNOWN_MAX:
        raise MetricError(f"{where}: {len(values)} values; a stats segment row has room for {KNOWN_MAX}")
    for v in values:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", v):
            raise MetricError(f"{where}: {v!r}: a known value is letters, digits, '_', '.' or '-'")
    if len(set(values)) != len(values) or not values:
        raise MetricError(f"{where}: values repeat, or there are none")
    return sorted(values)


def parse_bound(line, rest, path, low, high):
    """The one whole number of a "@@label-values N" or "@@label-sets N" line."""
    if len(rest) != 1 or not rest[0].isdigit() or not low <= int(rest[0]) <= high:
        raise MetricError(f"{path}: {line!r}: want one whole number {low}..{high}")
    return int(rest[0])


def parse_groups(line, rest, path):
    """"@@groups NAME[*] ...": (names, the ones marked "*")."""
    names = [w.rstrip("*") for w in rest]
    if not rest or any(not re.fullmatch(r"[a-z][a-z0-9_]*\*?", w) for w in rest) or len(set(names)) != len(names):
        raise MetricError(f"{path}: {line!r}: want @@groups NAME[*] ... (lower-case names, each once; "
                          "* marks a default group)")
    if len(names) > 31 or {"all", "exporter"} & set(names):
        raise MetricError(f"{path}: {line!r}: at most 31 groups, none named all or exporter (the exporter's own)")
    return names, [w.rstrip("*") for w in rest if w.endswith("*")]


def parse_slow(line, rest, path):
    """"@@slow-threshold default=S [HANDLER=S ...]": seconds, each a bound
    of duration_ns's buckets (checked in parse(), where they are known)."""
    want = f"{path}: {line!r}: want @@slow-threshold default=SECONDS [HANDLER=SECONDS ...]"
    values = {}
    for w in rest:
        name, eq, v = w.partition("=")
        if not eq or not name or name in values or not re.fullmatch(r"[A-Za-z0-9_.:/-]{1,31}", name):
            raise MetricError(want)
        values[name] = v
    if "default" not in values or len(values) > 17:  # the segment publishes 16 of billing.d's (stats_trail.h)
        raise MetricError(want + " (at most 16 handlers)")
    default = values.pop("default")
    return default, values


def slow_thresholds_ns(ms):
    """(default, {handler: threshold}) in nanoseconds."""
    q = ms.quantities["duration_ns"]
    ns = dict(zip(q.bounds_text, q.bounds_raw))
    return ns[ms.limits.slow_default], {h: ns[v] for h, v in ms.limits.slow_handlers.items()}


def parse_header(lines, path):
    quantities, label_bytes, default_bytes, known, limits = {}, {}, None, {}, Limits()
    for line in lines:
        try:
            words = shlex.split(line[2:])
        except ValueError as e:
            raise MetricError(f"{path}: {line!r}: {e}") from None
        if not words:
            raise MetricError(f"{path}: empty '@@' line")
        kind, rest = words[0], words[1:]
        if kind == "quantity":
            if not rest:
                raise MetricError(f"{path}: @@quantity needs an argument name")
            opts = parse_options(rest[1:], line)
            unknown = set(opts) - {"unit", "divide", "zero", "signed"}
            if unknown or "unit" not in opts or "divide" not in opts:
                raise MetricError(f"{path}: {line!r}: want @@quantity ARG unit=U divide=N [zero=unmeasured] [signed]")
            if opts.get("zero", "unmeasured") != "unmeasured":
                raise MetricError(f"{path}: {line!r}: zero= may only be 'unmeasured'")
            if not str(opts["divide"]).isdigit() or int(opts["divide"]) < 1:
                raise MetricError(f"{path}: {line!r}: divide= wants a positive integer")
            quantities[rest[0]] = Quantity(rest[0], opts["unit"], int(opts["divide"]), "zero" in opts,
                                           "signed" in opts)
        elif kind == "buckets":
            if not rest or rest[0] not in quantities:
                raise MetricError(f"{path}: {line!r}: @@buckets names no declared @@quantity")
            q = quantities[rest[0]]
            for text in rest[1:]:
                try:
                    v = Decimal(text)
                except InvalidOperation:
                    raise MetricError(f"{path}: {line!r}: bound {text!r} is not a number") from None
                raw = v * q.divide
                if raw != raw.to_integral_value():
                    raise MetricError(f"{path}: {line!r}: bound {text} is not a whole {q.name}")
                if ("%g" % float(v)) != text and str(int(v)) != text:
                    raise MetricError(f"{path}: {line!r}: write bound {text} as {'%g' % float(v)}")
                if q.bounds_raw and int(raw) <= q.bounds_raw[-1]:
                    raise MetricError(f"{path}: {line!r}: bounds must increase")
                q.bounds_text.append(text)
                q.bounds_raw.append(int(raw))
        elif kind == "native":
            if not rest or rest[0] not in quantities or quantities[rest[0]].native:
                raise MetricError(f"{path}: {line!r}: @@native names no declared @@quantity, or one twice")
            got = native.parse(rest, line, path, parse_options(rest[1:], line), quantities[rest[0]].divide)
            if isinstance(got, str):
                raise MetricError(got)
            quantities[rest[0]].native = got
        elif kind == "known":
            opts = parse_options(rest[1:], line)
            if len(rest) != 2 or set(opts) != {"file"} or opts["file"] is True:
                raise MetricError(f"{path}: {line!r}: want @@known ARG file=NAME")
            known[rest[0]] = read_known(path, rest[0], opts["file"])
        elif kind == "groups":
            limits.groups, limits.default_groups = parse_groups(line, rest, path)
        elif kind == "label-values":
            limits.label_values = parse_bound(line, rest, path, 1, IDX_KNOWN)
        elif kind == "label-sets":
            limits.label_sets = parse_bound(line, rest, path, 16, 1 << 24)
        elif kind == "slow-threshold":
            limits.slow_default, limits.slow_handlers = parse_slow(line, rest, path)
        elif kind == "label-bytes":
            for k, v in parse_options(rest, line).items():
                if v is True or not str(v).isdigit() or not 2 <= int(v) <= VALUE_BYTES or int(v) % 8:
                    raise MetricError(f"{path}: {line!r}: label bytes must be 8, 16, .. {VALUE_BYTES} "
                                      "(a stats segment's room for a label value)")
                if k == "default":
                    default_bytes = int(v)
                else:
                    label_bytes[k] = int(v)
        else:
            raise MetricError(f"{path}: unknown header line {line!r}")
    for q in quantities.values():
        if not q.bounds_raw:
            raise MetricError(f"{path}: quantity {q.name} has no @@buckets line")
    if default_bytes is None:
        raise MetricError(f"{path}: no '@@label-bytes default=N' line")
    for what, value in (("@@groups NAME[*] ...", limits.groups), ("@@label-values N", limits.label_values),
                        ("@@label-sets N", limits.label_sets), ("@@slow-threshold default=S", limits.slow_default)):
        if not value:
            raise MetricError(f"{path}: no '{what}' line")
    for arg, values in known.items():
        room = label_bytes.get(arg, default_bytes) - 1
        if any(len(v) > room for v in values):
            raise MetricError(f"{path}: @@known {arg}: a value longer than its {room} label bytes")
    return quantities, label_bytes, default_bytes, known, limits


LINE = re.compile(r"@@(counter|histogram)\s+(\w+)\s+(count|sum\((\w+)\)|observe\((\w+)\))\s*"
                  r"\{([^}]*)\}\s*(?:if\s+(\w+)\s*!=\s*0)?$")


def parse_labels(spec, probe, where):
    labels = []
    for item in [i.strip() for i in spec.split(",") if i.strip()]:
        m = re.fullmatch(r'(\w+)\s*=\s*"([^"]*)"', item)
        if m:
            labels.append(Label(m.group(1), "constant", constant=m.group(2)))
            continue
        m = re.fullmatch(r"(\w+)\s*=\s*(\w+)\s*\?\s*(\w+)\s*:\s*(\w+)", item)
        if m:
            labels.append(Label(m.group(1), "ternary", m.group(2), m.group(3), m.group(4)))
            continue
        m = re.fullmatch(r"(\w+)(?:\s*=\s*(\w+))?", item)
        if not m:
            raise MetricError(f"{where}: label {item!r} is not NAME, NAME=ARG, NAME=ARG?A:B or NAME=\"text\"")
        labels.append(Label(m.group(1), "value", m.group(2) or m.group(1)))
    return labels


def parse_feed(probe, lines, quantities, path):
    feed, current = None, None
    where = f"{path}: probe {probe.name}"
    arg_types = {n: t for n, t, _ in probe.args}
    for line in lines:
        if line.startswith("@@group"):
            words = line.split()
            if feed or len(words) != 2:
                raise MetricError(f"{where}: one '@@group NAME' line, before its metrics")
            feed = Feed(probe, words[1])
            continue
        if not line.startswith("@@"):
            if current is None:
                raise MetricError(f"{where}: text {line!r} belongs to no metric")
            current.help = (current.help + " " + line).strip()
            continue
        m = LINE.match(line)
        if not m or feed is None:
            raise MetricError(f"{where}: cannot read {line!r} (after '@@group NAME': "
                              "@@counter|@@histogram NAME count|sum(ARG)|observe(ARG) {LABELS} [if ARG != 0])")
        mtype, name, _, sum_arg, obs_arg, label_spec, cond = m.groups()
        source = "count" if sum_arg is None and obs_arg is None else "sum" if sum_arg else "observe"
        qarg = sum_arg or obs_arg
        if (mtype == "histogram") != (source == "observe"):
            raise MetricError(f"{where}: {name}: a histogram observe()s, a counter counts or sums")
        if mtype == "counter" and not name.endswith("_total"):
            raise MetricError(f"{where}: {name}: a counter's name ends in _total")
        if qarg is not None:
            if qarg not in arg_types:
                raise MetricError(f"{where}: {name}: no argument {qarg}")
            if qarg not in quantities:
                raise MetricError(f"{where}: {name}: {qarg} is not a declared @@quantity")
            if qarg not in feed.quantities:
                feed.quantities.append(qarg)
        labels = parse_labels(label_spec, probe, f"{where}: {name}")
        if cond is not None:
            if arg_types.get(cond) != "int":
                raise MetricError(f"{where}: {name}: 'if {cond} != 0' wants an int argument")
        for arg in [l.arg for l in labels if l.arg] + ([cond] if cond else []):
            if arg not in arg_types:
                raise MetricError(f"{where}: {name}: no argument {arg}")
            if arg_types[arg] not in TYPES_OK_FOR_LABELS:
                raise MetricError(f"{where}: {name}: {arg} is {arg_types[arg]}: IDs and amounts never make labels")
            if arg not in feed.fields:
                feed.fields.append(arg)
        for l in labels:
            if l.kind == "ternary" and arg_types[l.arg] != "int":
                raise MetricError(f"{where}: {name}: {l.name}={l.arg}?..: wants an int argument")
        if len({l.name for l in labels}) != len(labels) or "le" in {l.name for l in labels}:
            raise MetricError(f"{where}: {name}: label names repeat or use 'le'")
        current = Metric(probe, name, mtype, source, qarg, labels, cond, "")
        feed.metrics.append(current)
    if feed and not feed.metrics:
        raise MetricError(f"{where}: '@@group' but no metric")
    return feed


def parse(provider, text):
    """The MetricSet of PROVIDER (generate.Provider) whose billing.d is TEXT."""
    quantities, label_bytes, default_bytes, known, limits = parse_header(header_lines(text), provider.path)
    feeds = []
    for p in provider.probes:
        feed = parse_feed(p, p.metric_lines, quantities, provider.path)
        if feed:
            if feed.group not in limits.groups:
                raise MetricError(f"{provider.path}: probe {p.name}: @@group {feed.group} is not one of "
                                  f"@@groups ({' '.join(limits.groups)})")
            feeds.append(feed)
    # Families: same type, unit and help wherever declared; help given once.
    families = {}
    for f in feeds:
        for m in f.metrics:
            first = families.setdefault(m.name, m)

            def unit(x):
                return quantities[x.quantity].unit if x.quantity else ""
            if first is not m:
                if m.help:
                    raise MetricError(f"{provider.path}: {m.name}: help given twice; give it once")
                if (m.type, unit(m), [l.name for l in m.labels]) != (first.type, unit(first),
                                                                     [l.name for l in first.labels]):
                    raise MetricError(f"{provider.path}: {m.name}: declared twice with another type, "
                                      "unit or labels")
                m.help = first.help
            elif not m.help:
                raise MetricError(f"{provider.path}: {m.name}: no help text")
    # A family's declarations adjacent (one # HELP / # TYPE each in the
    # exposition), families in order of first declaration.
    order = list(families)
    metrics = sorted([m for f in feeds for m in f.metrics], key=lambda m: order.index(m.name))
    for arg in known:
        if not any(arg in f.fields for f in feeds):
            raise MetricError(f"{provider.path}: @@known {arg}: no metric has a label from an argument {arg}")
    for f in feeds:
        types = {n: t for n, t, _ in f.probe.args}
        for arg in f.fields:
            if arg in known and types[arg] != "char *":
                raise MetricError(f"{provider.path}: @@known {arg}: probe {f.probe.name} passes it as an int")
    q = quantities.get("duration_ns")
    for v in [limits.slow_default, *limits.slow_handlers.values()]:
        if not q or v not in q.bounds_text:
            raise MetricError(f"{provider.path}: @@slow-threshold {v}: not one of duration_ns's bucket bounds "
                              f"({' '.join(q.bounds_text) if q else 'no duration_ns quantity'}): the SLO rules and "
                              "the exemplars read the bucket it ends")
    ms = MetricSet(quantities, label_bytes, default_bytes, known, feeds, metrics, limits)
    ms.probes = provider.probes  # every probe, fed or not: the trails' event kinds (trail_emit.py)
    return ms


# --- C ----------------------------------------------------------------------

def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def key_layout(ms, feed):
    """[(C declaration, field arg, kind, size)] and the padding to 8 bytes."""
    types = {n: t for n, t, _ in feed.probe.args}
    out, size = [], 0
    for arg in feed.fields:
        if types[arg] == "char *":
            n = ms.field_bytes(arg)
            out.append((f"char {arg}[{n}];", arg, "BX_KEY_STRING", n))
        else:
            n = 4
            out.append((f"bx_s32 {arg};", arg, "BX_KEY_INT32", n))
        size += n
    pad = (-size) % 8
    return out, pad


def classic_below(q):
    """For a value in [2^k, 2^(k+1)): how many bounds lie below 2^k (all
    below the value), per k; or None when two bounds share such an interval
    or a bound is below 1 (then one more compare would not settle it)."""
    bounds = q.bounds_raw
    if not bounds or min(bounds) < 1:
        return None
    table = []
    for k in range(64):
        if sum(1 for b in bounds if 2 ** k <= b < 2 ** (k + 1)) > 1:
            return None
        table.append(sum(1 for b in bounds if b < 2 ** k))
    return table


def metrics_layout_h(provider, ms):
    o = [HEADER_BANNER,
         "/* What the metrics of billing.d count, laid out once for every path that\n"
         " * counts them: the exporter's BPF programs (per-CPU maps) and the stats\n"
         " * writer (per-thread slots).  C99, C++ and BPF C; no libc. */\n"
         "#ifndef BILLING_METRICS_LAYOUT_H\n#define BILLING_METRICS_LAYOUT_H\n\n"
         "#ifdef __bpf__\n#  include <linux/types.h>\ntypedef __u64 bx_u64;\ntypedef __s64 bx_s64;\n"
         "typedef __s32 bx_s32;\n#  define BX_INLINE static __always_inline\n#else\n"
         "#  include <stdint.h>\ntypedef uint64_t bx_u64;\ntypedef int64_t bx_s64;\ntypedef int32_t bx_s32;\n"
         "#  if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)\n"
         "#    define BX_INLINE static inline\n#  else\n#    define BX_INLINE static __inline__\n#  endif\n"
         "#endif\n\n"
         "/* How an observation adds: a plain add here (BPF: a per-CPU copy); the\n"
         " * stats writer defines it as a relaxed load and store on its own slot, or\n"
         " * an atomic add on the one slot threads share when every slot is taken. */\n"
         "#ifndef BX_ADD\n#  define BX_ADD(lvalue, x, shared) ((void)(shared), (lvalue) += (x))\n#endif\n\n"
         "/* The bit of x's leading one, x >= 1 (outside BPF): one bsr where GCC\n"
         " * offers it without the extension a clz's int result takes. */\n"
         "#ifndef __bpf__\n#  if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)\n"
         "#    define BX_MSB(x) ((bx_u64)__builtin_ia32_bsrdi((long long)(x)))\n#  else\n"
         "#    define BX_MSB(x) ((bx_u64)(63 ^ __builtin_clzll(x)))\n#  endif\n#endif\n\n"]
    for q in ms.quantities.values():
        Q = q.name.upper()
        n = len(q.bounds_raw)
        suffix = "LL" if q.signed else "ULL"
        o.append(f"/* {q.name}: observed in {q.unit}" + (" (divided by %d)" % q.divide if q.divide != 1 else "")
                 + ("; 0 is not measured: counted by the probe, never observed" if q.unmeasured_zero else "")
                 + ". */\n")
        o.append(f"#define BX_{Q}_BOUNDS {n}\n#define BX_{Q}_BUCKETS {n + 1}\n")
        o.append(f"#define BX_{Q}_BOUND_LIST " + ", ".join(f"{b}{suffix}" for b in q.bounds_raw) + "\n")
        o.append(f"struct bx_q_{q.name} {{\n\tbx_u64 count; /* observations */\n"
                 f"\tbx_u64 sum;   /* of the {'signed ' if q.signed else ''}values, two's complement */\n"
                 f"\tbx_u64 buckets[BX_{Q}_BUCKETS]; /* not cumulative; the last is +Inf */\n}};\n")
        o.append(f"BX_INLINE void bx_observe_{q.name}(struct bx_q_{q.name} *q, {q.c_type} x, int shared)\n{{\n"
                 f"\tstatic const {q.c_type} bounds[BX_{Q}_BOUNDS] = {{ BX_{Q}_BOUND_LIST }};\n"
                 f"\tunsigned i = 0;\n\tint b;\n\n")
        if q.unmeasured_zero:
            o.append("\tif (x == 0)\n\t\treturn;\n")
        o.append(f"#ifdef __bpf__\n#pragma unroll\n#endif\n\tfor (b = 0; b < BX_{Q}_BOUNDS; b++)\n"
                 f"\t\ti += x > bounds[b];\n\tBX_ADD(q->count, 1, shared);\n\tBX_ADD(q->sum, (bx_u64)x, shared);\n"
                 f"\tif (i < BX_{Q}_BUCKETS)\n\t\tBX_ADD(q->buckets[i], 1, shared);\n}}\n\n")
        if q.native:
            o.append("#ifndef __bpf__\n" + native.layout_h(q, q.native, classic_below(q)) + "#endif\n\n")
    o.append("/* Per probe that feeds metrics: its key, the label arguments (strings cut\n"
             " * to fit, NUL-padded; the padding is explicit so a key compares as bytes),\n"
             " * and its value. */\n")
    for i, f in enumerate(ms.feeds):
        fields, pad = key_layout(ms, f)
        o.append(f"#define BX_MAP_{f.probe.macro} {i}\n")
        o.append(f"struct bx_key_{f.probe.func} {{\n" + "".join(f"\t{d}\n" for d, _, _, _ in fields)
                 + (f"\tchar pad_[{pad}];\n" if pad else "") + "};\n")
        o.append(f"struct bx_value_{f.probe.func} {{\n\tbx_u64 count; /* fires */\n"
                 + "".join(f"\tstruct bx_q_{q} {q};\n" for q in f.quantities) + "};\n")
    o.append("/* Keys a fire can have once folded (metrics.MetricSet.fold_keys): the\n"
             " * room each path reserves per map for fires its full map cannot take. */\n")
    for f in ms.feeds:
        o.append(f"#define BX_FOLD_KEYS_{f.probe.macro} {ms.fold_keys(f)}\n")
    o.append(f"#define BX_FOLD_KEYS_MAX {max(ms.fold_keys(f) for f in ms.feeds)}\n")
    o.append(f"#define BX_FOLD_KEYS_TOTAL {sum(ms.fold_keys(f) for f in ms.feeds)}\n")
    for arg, values in ms.known.items():
        o.append(f"#define BX_KNOWN_{arg.upper()}_COUNT {len(values)} /* @@known {arg} */\n")
    o.append(f"#define BX_MAP_COUNT {len(ms.feeds)}\n")
    o.append("#define BX_MAP_NAME_LIST " + ", ".join(f'"{f.map_name}"' for f in ms.feeds) + "\n")
    o.append(f"#define BX_MAX_FIELDS {max(len(f.fields) for f in ms.feeds)}\n")
    o.append(f"#define BX_MAX_QUANTITIES_PER_MAP {max(len(f.quantities) for f in ms.feeds) or 1}\n")
    o.append("/* Room for any probe's value, in 64-bit cells. */\nunion bx_value_any {\n"
             + "".join(f"\tstruct bx_value_{f.probe.func} {f.probe.func};\n" for f in ms.feeds)
             + "};\n#define BX_MAX_CELLS (sizeof(union bx_value_any) / 8)\n")
    o.append(f"#define BX_KEY_MAX {max(sum(n for _, _, _, n in key_layout(ms, f)[0]) + key_layout(ms, f)[1] for f in ms.feeds)}\n")
    o.append(f"#define BX_LABEL_BYTES_MAX {max([ms.default_bytes] + list(ms.label_bytes.values()))}\n")
    o.append("/* A row's value indices: a label value below BS_IDX_KNOWN, BS_IDX_KNOWN + k\n"
             " * the field's known value k (\"@@known\", sorted), the overflow row (a label\n"
             " * set past the map's rows), \"other\" (a value past the label's values). */\n"
             f"#define BS_IDX_KNOWN {IDX_KNOWN}\n#define BS_IDX_OVERFLOW {IDX_OVERFLOW}\n"
             f"#define BS_IDX_FOLDED {IDX_FOLDED}\n"
             "/* A label value's room in a stats segment's dictionary (@@label-bytes at most). */\n"
             f"#define BS_VALUE_BYTES {VALUE_BYTES}\n")
    lim = ms.limits
    o.append(f"/* A label's values before \"other\" (@@label-values); label sets a BPF map\n"
             f" * holds (@@label-sets). */\n#define BX_LABEL_VALUES {lim.label_values}\n"
             f"#define BX_LABEL_SETS {lim.label_sets}\n")
    o.append("/* @@slow-threshold's default, in ns: the bucket bound the SLO rules in\n"
             f" * monitoring/ count as slow. */\n#define BX_SLOW_DEFAULT_NS {slow_thresholds_ns(ms)[0]}ULL\n")
    o.append("/* Metric groups (@@groups, billing-exporter --metrics), then the\n"
             " * exporter's own, always on. */\n")
    for i, g in enumerate(lim.groups):
        o.append(f"#define BX_GROUP_{g.upper()} (1u << {i})\n")
    o.append(f"#define BX_GROUP_SELF (1u << {len(lim.groups)})\n")
    o.append("#define BX_GROUPS_PROBES (" + " | ".join(f"BX_GROUP_{g.upper()}" for g in lim.groups) + ")\n")
    o.append("#define BX_GROUPS_DEFAULT (" + " | ".join(f"BX_GROUP_{g.upper()}" for g in lim.default_groups)
             + " | BX_GROUP_SELF)\n")
    o.append("#define BX_GROUP_NAME_ROWS " + ", ".join(f'{{ "{g}", BX_GROUP_{g.upper()} }}' for g in lim.groups)
             + ', { "exporter", BX_GROUP_SELF }\n')
    o.append("\n#endif\n")
    return "".join(o)


def count_fire(feed, string_field, int_field, row, observe):
    """The statements both counting paths generate for a fire (the BPF
    program, the stats writer): each label argument into the key, the row
    and its fire count, each quantity observed.  Each path says how to read
    an argument and where its row is."""
    types = {n: t for n, t, _ in feed.probe.args}
    out = [f"\t{string_field(a) if types[a] == 'char *' else int_field(a)};\n" for a in feed.fields]
    out.append(f"\t{row};\n")
    return out + [f"\t{observe(q)};\n" for q in feed.quantities]


def known_arrays_c(ms):
    """The "@@known" values as sorted C arrays (bsearch with strcmp)."""
    o = []
    for arg, values in ms.known.items():
        o.append(f"static const char *const bx_known_{arg}[BX_KNOWN_{arg.upper()}_COUNT] = {{\n")
        for i in range(0, len(values), 12):
            o.append("\t" + " ".join(c_string(v) + "," for v in values[i:i + 12]) + "\n")
        o.append("};\n")
    return "".join(o)


def known_ref(ms, arg):
    """A key field's known values, as the C initialiser pair {list, count}."""
    return f"bx_known_{arg}, BX_KNOWN_{arg.upper()}_COUNT" if arg in ms.known else "NULL, 0"


PROGRAMS_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exporter_programs.bpf.in")


def template_fragments(path):
    """The "%% name" fragments of a template file, as string.Templates; a
    fragment named statement-* is one C statement without its indent, ";"
    or newline (count_fire() adds them)."""
    frags, name = {}, None
    for line in open(path).read().splitlines(keepends=True):
        if line.startswith("%% "):
            name = line[3:].strip()
            frags[name] = ""
        elif name is not None:
            frags[name] += line
    return {n: string.Template(t.rstrip("\n") if n.startswith("statement-") else t) for n, t in frags.items()}


def exporter_programs_h(provider, ms):
    """Included by billing_exporter.bpf.c: its maps and programs, from the
    fragments of exporter_programs.bpf.in."""
    frag = template_fragments(PROGRAMS_TEMPLATE)
    o = [HEADER_BANNER, frag["banner"].substitute()]
    for arg in ms.known:
        o.append(frag["known-values"].substitute(arg=arg, ARG=arg.upper(), bytes=ms.field_bytes(arg)))
    for f in ms.feeds:
        o.append(frag["maps"].substitute(map=f.map_name, fold_map=f.fold_map_name, func=f.probe.func,
                                         MACRO=f.probe.macro))
    o.append(frag["maps-end"].substitute())
    for f in ms.feeds:
        types = {n: t for n, t, _ in f.probe.args}
        o.append(frag["fold-begin"].substitute(func=f.probe.func))
        for arg in f.fields:
            kind = "fold-int" if types[arg] != "char *" else "fold-known" if arg in ms.known else "fold-string"
            o.append(frag[kind].substitute(arg=arg))
        o.append(frag["fold-end"].substitute())
    for f in ms.feeds:
        pos = {n: i for i, (n, _, _) in enumerate(f.probe.args)}
        names = dict(func=f.probe.func, d_name=f.probe.d_name, map=f.map_name, fold_map=f.fold_map_name,
                     MACRO=f.probe.macro)
        o.append(frag["program-begin"].substitute(names))
        o += count_fire(f, lambda a: frag["statement-string-field"].substitute(arg=a, pos=pos[a]),
                        lambda a: frag["statement-int-field"].substitute(arg=a, pos=pos[a]),
                        frag["statement-row"].substitute(names),
                        lambda q: frag["statement-observe"].substitute(quantity=q, pos=pos[q],
                                                                       c_type=ms.quantities[q].c_type))
        o.append(frag["program-end"].substitute())
    return "".join(o)


def metric_table_gen_h(provider, ms):
    """bx_quantities[], bx_maps[] and BX_PROBE_METRIC_ROWS, for
    tools/billing-exporter/common/metric_table.c only."""
    qindex = {name: i for i, name in enumerate(ms.quantities)}
    o = [HEADER_BANNER, "/* Included by tools/billing-exporter/common/metric_table.c alone. */\n\n"]
    o.append(known_arrays_c(ms))
    o.append("const bx_known_map_t bx_known_maps[] = {\n")
    for arg in ms.known:
        o.append(f"\t{{ {c_string('k_' + arg)}, {ms.field_bytes(arg)}, {known_ref(ms, arg)} }},\n")
    o.append("\t{ NULL, 0, NULL, 0 }\n};\n\n")
    o.append("const bx_quantity_t bx_quantities[] = {\n")
    for q in ms.quantities.values():
        Q = q.name.upper()
        o.append(f"\t{{ {c_string(q.name)}, {c_string(q.unit)}, {q.divide}.0, {int(q.unmeasured_zero)}, "
                 f"{int(q.signed)}, BX_{Q}_BOUNDS, {{ " + ", ".join(c_string(t) for t in q.bounds_text)
                 + " } },\n")
    o.append("};\nconst size_t bx_quantity_count = sizeof bx_quantities / sizeof bx_quantities[0];\n\n")
    o.append("const bx_map_desc_t bx_maps[] = {\n")
    for f in ms.feeds:
        fields, _ = key_layout(ms, f)
        pos = {n: i for i, (n, _, _) in enumerate(f.probe.args)}
        st = f"struct bx_key_{f.probe.func}"
        fl = ", ".join(f"{{ {c_string(arg)}, {pos[arg]}, {kind}, offsetof({st}, {arg}), {size}, "
                       f"{known_ref(ms, arg)} }}" for _, arg, kind, size in fields)
        ql = ", ".join(f"{{ {qindex[q]}, {pos[q]}, offsetof(struct bx_value_{f.probe.func}, {q}) / 8 }}"
                       for q in f.quantities)
        o.append(f"\t[BX_MAP_{f.probe.macro}] = {{ {c_string(f.map_name)}, {c_string(f.fold_map_name)}, "
                 f"{c_string(f.probe.d_name)}, "
                 f"BX_GROUP_{f.group.upper()}, sizeof({st}), sizeof(struct bx_value_{f.probe.func}), "
                 f"{len(fields)}, {{ {fl} }}, {len(f.quantities)}, {{ {ql or '{ 0, 0, 0 }'} }} }},\n")
    o.append("};\nconst size_t bx_map_count = sizeof bx_maps / sizeof bx_maps[0];\n\n")
    o.append("/* The metrics fed by probes, one family's entries adjacent. */\n#define BX_PROBE_METRIC_ROWS")
    rows = []
    for m in ms.metrics:
        feed = next(f for f in ms.feeds if f.probe is m.probe)
        labels = []
        for l in m.labels:
            if l.kind == "constant":
                labels.append(f"{{ {c_string(l.name)}, BX_DEC_CONSTANT, 0, {c_string(l.constant)}, NULL }}")
            elif l.kind == "ternary":
                labels.append(f"{{ {c_string(l.name)}, BX_DEC_NONZERO, {feed.fields.index(l.arg)}, "
                              f"{c_string(l.zero)}, {c_string(l.nonzero)} }}")
            else:
                labels.append(f"{{ {c_string(l.name)}, BX_DEC_VALUE, {feed.fields.index(l.arg)}, NULL, NULL }}")
        src = {"count": "BX_SRC_COUNT", "sum": "BX_SRC_SUM", "observe": "BX_SRC_HIST"}[m.source]
        qi = feed.quantities.index(m.quantity) if m.quantity else -1
        unit = ms.quantities[m.quantity].unit if m.quantity else ""
        where = feed.fields.index(m.where) if m.where else "BX_WHERE_ALL"
        mtype = {"counter": "BX_COUNTER", "histogram": "BX_HISTOGRAM"}[m.type]
        rows.append(f"\t{{ {c_string(m.name)}, {mtype}, {c_string(unit)}, {c_string(m.help)}, "
                    f"BX_MAP_{m.probe.macro}, {src}, {qi}, {where}, {len(labels)}, {{ {', '.join(labels)} }}, "
                    "NULL }")
    o.append(" \\\n" + ", \\\n".join(rows) + "\n")
    return "".join(o)


COMMANDS = {
    "billing-metrics-layout-h": metrics_layout_h,
    "billing-exporter-programs-h": exporter_programs_h,
    "metric-table-gen-h": metric_table_gen_h,
}

"""The stats writer's generated half, from billing.d's metric declarations
(metrics.py parses them; lib/stats.c is the hand-written half):

  billing-stats-gen-h  billing/stats_gen.h: billing_stats_<probe>() for each
                       probe that feeds metrics, with only the arguments its
                       metrics need (probe_macros.h calls them in a stats build)
  billing-stats-gen-c  their definitions: build the probe's key (the label
                       arguments, cut to fit) and count into this thread's
                       cells with the observe functions the exporter's BPF
                       programs use; the map table lib/stats.c interns
                       labels with; and the segment's self-description
"""

import metrics
import trail_emit

BANNER = metrics.HEADER_BANNER
CTYPE = metrics.CTYPE


def needed_args(feed):
    """The probe's arguments its metrics read, in billing.d's order."""
    used = set(feed.fields) | set(feed.quantities)
    return [(n, t) for n, t, _ in feed.probe.args if n in used]


def params(feed):
    return ", ".join(f"{CTYPE[t]}{'' if t == 'char *' else ' '}{n}" for n, t in needed_args(feed)) or "void"


DESCRIPTION_GRAMMAR = 5  # docs/stats.md, "The self-description": a new kind of line is a new grammar


def family_lines(ms, feed, m):
    """One metric family's entry fed by this map: what it reads from the
    map's cells and how its labels decode from the map's fields."""
    src = {"count": "count", "sum": "sum", "observe": "observe"}[m.source]
    out = [f"family {m.name} {m.type} {src} {m.quantity or '-'} {m.where or '-'}", f"help {m.help}"]
    for l in m.labels:
        if l.kind == "constant":
            out.append(f"label {l.name} constant {l.constant}")
        elif l.kind == "ternary":
            out.append(f"label {l.name} nonzero {l.arg} {l.zero} {l.nonzero}")
        else:
            out.append(f"label {l.name} value {l.arg}")
    return out


def native_text(q):
    """A quantity's native buckets for its "quantity" line: - or
    SCHEMA,LOW,HIGH (provider/native.py)."""
    n = q.native
    return f"{n.schema},{n.low},{n.high}" if n else "-"


def description(ms):
    """The segment's self-description: everything a reader needs to decode
    a segment and serve its metric families, as text (docs/stats.md).  A
    reader decodes each segment by its own description."""
    lines = [f"billing-stats description {DESCRIPTION_GRAMMAR}"]
    for arg, values in ms.known.items():
        lines.append(f"known {arg} {','.join(values)}")
    for q in ms.quantities.values():
        lines.append(f"quantity {q.name} unit={q.unit.replace(' ', '_')} divide={q.divide} "
                     f"unmeasured_zero={int(q.unmeasured_zero)} signed={int(q.signed)} "
                     f"le={','.join(q.bounds_text)} native={native_text(q)}")
    for f in ms.feeds:
        fields, pad = metrics.key_layout(ms, f)
        cells = 1 + sum(3 + len(ms.quantities[q].bounds_raw) for q in f.quantities)
        lines.append(f"map {f.map_name} probe={f.probe.d_name} group={f.group} key={sum(n for *_, n in fields) + pad} "
                     f"cells={cells} folds={ms.fold_keys(f)}")
        lines += [f"field {arg} {'string' if kind == 'BX_KEY_STRING' else 'int32'} {size}"
                  for _, arg, kind, size in fields]
        lines += [f"value {q}" for q in f.quantities]
        for m in ms.metrics:
            if m.probe is f.probe:
                lines += family_lines(ms, f, m)
    lines += trail_emit.desc_lines(ms.probes)
    return "\n".join(lines) + "\n"


def stats_gen_h(provider, ms):
    o = [BANNER, "/* Included by billing/probes.h in a stats build; include that instead. */\n"
         "#ifndef BILLING_STATS_GEN_H\n#define BILLING_STATS_GEN_H\n\n#include <stdint.h>\n\n"
         "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
         "/* Non-zero when the stats are off in this process: BILLING_STATS=off in\n"
         " * the environment, or the segment could not be made (said once on stderr). */\n"
         "extern int billing_stats_off_;\n\n"
         "/* This process's segment file, \"\" before its first stats event or with\n"
         " * the stats off (tests, tools). */\n"
         "const char *billing_stats_path(void);\n\n"]
    for f in ms.feeds:
        o.append(f"/* {f.probe.name}: counts into this thread's slot of the stats segment. */\n"
                 f"#define BILLING_STATS_FEEDS_{f.probe.macro} 1\n"
                 f"void billing_stats_{f.probe.func}({params(f)});\n\n")
    o.append(trail_emit.gen_h(ms.probes))
    o.append("#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
    return "".join(o)


def below_table(q):
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


def observe_hot(q):
    """This thread's own slot's observe of quantity q (the first level's
    hit), without a branch on the value: the bucket is the count of bounds
    below x, as bx_observe_<q> (billing_metrics_layout.h, the BPF programs'
    linear search) finds it; stats-observe checks the two agree at and
    beside every bound and power of two.  With at most one bound per power
    of two, x's highest bit says how many bounds are below it and one
    compare settles the next; otherwise a binary search over the bounds
    padded to 2^k - 1 with the type's maximum, which no value exceeds."""
    n = len(q.bounds_raw)
    Q = q.name.upper()
    pad = "INT64_MAX" if q.signed else "UINT64_MAX"
    below = below_table(q)
    size = n + 1 if below else 2 ** max(1, n.bit_length()) - 1
    o = [f"static inline void bs_observe_{q.name}(struct bx_q_{q.name} *q, {q.c_type} x)\n{{\n"
         f"\tstatic const {q.c_type} b[{size}] = {{ BX_{Q}_BOUND_LIST"
         + "".join(f", {pad}" for _ in range(size - n)) + " };\n"]
    if below:  # indexed by the count of leading zero bits: 63 - k
        by_clz = below[::-1]
        o.append("\tstatic const unsigned char below[64] = {\n"
                 + "".join("\t\t" + ", ".join(str(v) for v in by_clz[i:i + 16]) + ",\n" for i in range(0, 64, 16))
                 + "\t};\n")
    o.append("\tunsigned i;\n\n" if below else "\tunsigned i = 0;\n\n")
    if q.unmeasured_zero:
        o.append("\tif (x == 0)\n\t\treturn;\n")
    if below:
        value = "x > 0 ? (bx_u64)x : 1" if q.signed else "x | 1"
        o.append(f"\ti = below[__builtin_clzll({value})];\n\ti += (unsigned)(x > b[i]);\n")
    else:
        k = max(1, n.bit_length())
        for step in reversed(range(k)):
            o.append(f"\ti += (unsigned)(x > b[i + {2 ** step - 1}]) << {step};\n" if step else
                     "\ti += (unsigned)(x > b[i]);\n")
    o.append("\tBS_ADD_OWN(q->count, 1);\n\tBS_ADD_OWN(q->sum, (bx_u64)x);\n\tBS_ADD_OWN(q->buckets[i], 1);\n}\n\n")
    return "".join(o)


def native_cells(ms, feed):
    """A row's native cells in feed's map: each value's that declares
    native buckets, the zero bucket and out of range included, in order."""
    return sum(ms.quantities[q].native.buckets + 2 for q in feed.quantities if ms.quantities[q].native)


def native_calls(ms, feed, indent, cached=False):
    """Count each native value of a fire into its row's native buckets:
    through the first-level entry e's cached row (cached), or found from
    v, the row's cells.  The value's buckets start where the ones before
    end, as the description's order lays them."""
    o, at = [], 0
    for q in feed.quantities:
        n = ms.quantities[q].native
        if not n:
            continue
        test = [f"{q} != 0"] * ms.quantities[q].unmeasured_zero + ["e->native"] * cached
        guard = f"if ({' && '.join(test)})\n{indent}\t" if test else ""
        cell = f"{at} + bx_native_index_{q}({q})"
        o.append(f"{indent}{guard}" + (f"__atomic_fetch_add(&e->native[{cell}], 1, __ATOMIC_RELAXED);\n" if cached else
                 f"bs_native_add_(BX_MAP_{feed.probe.macro}, v, sizeof *v, {native_cells(ms, feed)}, {cell});\n"))
        at += n.buckets + 2
    return "".join(o)


def l1_arg(feed, arg):
    """A label argument as the first level keys it: a string's address, an
    int's value."""
    types = {n: t for n, t, _ in feed.probe.args}
    return f"(uintptr_t){arg}" if types[arg] == "char *" else f"(uintptr_t)(uint32_t){arg}"


def stats_gen_c(provider, ms):
    o = [BANNER,
         "/* The stats writer's generated half: lib/stats.c is the other.  Each\n"
         " * billing_stats_<probe>() looks its label arguments up in this thread's\n"
         " * first-level cache (stats_writer.h): a hit counts at once; a miss\n"
         " * (miss_<probe>) builds the key from the labels' bytes, counts through\n"
         " * bs_cells_(), and caches the arguments when every string is a literal. */\n"
         "#include <stdint.h>\n#include <string.h>\n\n"
         "#include \"stats_writer.h\" /* BX_ADD as this thread's relaxed store, bs_cells_() */\n"
         "#include \"billing/stats_gen.h\"\n\n"
         "#if defined(__GNUC__)\n#  define BS_COLD __attribute__((noinline, cold))\n"
         "#  define BS_LIKELY(x) __builtin_expect(!!(x), 1)\n#else\n#  define BS_COLD\n"
         "#  define BS_LIKELY(x) (x)\n#endif\n\n"]
    o += [observe_hot(q) for q in ms.quantities.values()]
    for f in ms.feeds:
        types = {n: t for n, t, _ in f.probe.args}
        strings = [a for a in f.fields if types[a] == "char *"]
        slot = f"bs_l1_slot_({' ^ '.join(l1_arg(f, a) for a in f.fields) or '0'})"
        match = "".join(f" && e->arg[{i}] == {l1_arg(f, a)}" for i, a in enumerate(f.fields))
        hit = ("\t\tBS_ADD_OWN(v->count, 1);\n"
               + "".join(f"\t\tbs_observe_{q}(&v->{q}, {q});\n" for q in f.quantities) + native_calls(ms, f, "\t\t")
               + "\t\treturn;\n")
        hit_cached = ("\t\tBS_ADD_OWN(v->count, 1);\n"
                      + "".join(f"\t\tbs_observe_{q}(&v->{q}, {q});\n" for q in f.quantities)
                      + native_calls(ms, f, "\t\t", cached=True) + "\t\treturn;\n")
        o.append(f"static BS_COLD void miss_{f.probe.func}({params(f)})\n{{\n"
                 f"\tstruct bx_key_{f.probe.func} k;\n\tstruct bx_value_{f.probe.func} *v;\n"
                 f"\tsize_t slot = {slot};\n\tbs_l1_entry_t *e;\n\tint shared;\n\n"
                 "\t/* Two label sets that share an entry: the second sits next to it. */\n"
                 f"\tif (bs_self_) {{\n\t\te = &bs_self_->l1[BX_MAP_{f.probe.macro}][slot ^ 1];\n"
                 f"\t\tv = (struct bx_value_{f.probe.func} *)e->cells;\n"
                 f"\t\tif (v{match}) {{\n" + hit_cached.replace("\t\t", "\t\t\t")
                 + "\t\t}\n\t}\n"
                 "\tmemset(&k, 0, sizeof k);\n")
        o += metrics.count_fire(f, lambda a: f"bs_copy_label_(k.{a}, {a}, sizeof k.{a})", lambda a: f"k.{a} = {a}",
                                f"v = (struct bx_value_{f.probe.func} *)bs_cells_(BX_MAP_{f.probe.macro}, &k, "
                                "sizeof k, sizeof *v / 8, &shared);\n\tif (!v)\n\t\treturn;\n"
                                "\tif (shared) {\n\t\tBX_ADD(v->count, 1, 1)",
                                lambda q: f"\tbx_observe_{q}(&v->{q}, {q}, 1)")
        o.append(native_calls(ms, f, "\t\t") + "\t\treturn;\n\t}\n" + hit.replace("\t\treturn;\n", "").replace("\t\t", "\t"))
        o.append(("\tif (" + " || ".join(f"!bs_immutable_({a})" for a in strings) + ")\n\t\treturn;\n"
                  if strings else "")
                 + f"\te = &bs_self_->l1[BX_MAP_{f.probe.macro}][slot];\n"
                 f"\tif (e->cells && !bs_self_->l1[BX_MAP_{f.probe.macro}][slot ^ 1].cells)\n"
                 f"\t\te = &bs_self_->l1[BX_MAP_{f.probe.macro}][slot ^ 1];\n"
                 + "".join(f"\te->arg[{i}] = {l1_arg(f, a)};\n" for i, a in enumerate(f.fields))
                 + (f"\te->native = bs_native_row_(BX_MAP_{f.probe.macro}, v, sizeof *v, {native_cells(ms, f)});\n"
                    if native_cells(ms, f) else "")
                 + "\te->cells = v;\n}\n\n")
        args = ", ".join(n for n, _ in needed_args(f))
        o.append(f"void billing_stats_{f.probe.func}({params(f)})\n{{\n"
                 "\tbs_thread_t *t = bs_self_;\n\n"
                 "\tif (BS_LIKELY(t)) {\n"
                 f"\t\tconst bs_l1_entry_t *e = &t->l1[BX_MAP_{f.probe.macro}][{slot}];\n"
                 f"\t\tstruct bx_value_{f.probe.func} *v = (struct bx_value_{f.probe.func} *)e->cells;\n"
                 f"\t\tif (BS_LIKELY(v{match})) {{\n"
                 "\t\t\tBS_ADD_OWN(v->count, 1);\n"
                 + "".join(f"\t\t\tbs_observe_{q}(&v->{q}, {q});\n" for q in f.quantities)
                 + native_calls(ms, f, "\t\t\t", cached=True)
                 + "\t\t\treturn;\n\t\t}\n\t}\n"
                 f"\tmiss_{f.probe.func}({args});\n}}\n\n")
    o.append(trail_emit.gen_c(ms))
    return "".join(o)


def stats_desc_c(provider, ms):
    """The description alone: the writer puts it in each segment; the
    reader finds this build's maps among a segment's by it."""
    text = description(ms).encode()
    # As bytes: C99 compilers need not take a string literal this long.
    o = [BANNER + '#include <stddef.h>\n\n#include "stats_segment.h"\n\n/*\n'
         + "".join(f" * {l.replace('*/', '* /')}\n" for l in text.decode().splitlines())
         + " */\nconst char billing_stats_desc_[] = {\n"
         + "".join("\t" + ", ".join(f"0x{b:02x}" for b in text[i:i + 12]) + ",\n" for i in range(0, len(text), 12))
         + "\t0\n};\n\n"]
    o.append(metrics.known_arrays_c(ms) + "\n")
    o.append("const bs_map_info_t billing_stats_maps_[BX_MAP_COUNT] = {\n")
    base = []
    for f in ms.feeds:
        fields, _ = metrics.key_layout(ms, f)
        st = f"struct bx_key_{f.probe.func}"
        rows = f"BS_GENERAL_ROWS + BX_FOLD_KEYS_{f.probe.macro} + 1"
        fl = ", ".join(f"{{ offsetof({st}, {arg}), {size}, {1 if kind == 'BX_KEY_STRING' else 0}, "
                       f"{metrics.known_ref(ms, arg)} }}" for _, arg, kind, size in fields)
        o.append(f"\t[BX_MAP_{f.probe.macro}] = {{ sizeof({st}), sizeof(struct bx_value_{f.probe.func}) / 8, "
                 f"{rows}, {' + '.join(base) or '0'}, {len(fields)}, {{ {fl} }}, {native_cells(ms, f)} }},\n")
        base.append(f"({rows})")
    o.append("};\n\n")
    return "".join(o)


COMMANDS = {
    "stats-desc-c": stats_desc_c,
    "stats-gen-h": stats_gen_h,
    "stats-gen-c": stats_gen_c,
}

"""The stats writer's generated half, from billing.d's metric declarations
(metrics.py parses them; lib/stats_writer.c is the hand-written half):

  billing-stats-gen-h  billing/stats_gen.h: billing_stats_<probe>() for each
                       probe that feeds metrics, with only the arguments its
                       metrics need (probe_macros.h calls them in a stats build)
  billing-stats-gen-c  their definitions: build the probe's key (the label
                       arguments, cut to fit) and count into this thread's
                       cells with the observe functions the exporter's BPF
                       programs use; the map table lib/stats_writer.c interns
                       labels with; and the segment's self-description
"""

import metrics
import trail_emit
from billing_d import spans

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


def classic_bucket(q):
    """bs_bucket_<q>(x, j): the classic bucket of x >= 1 whose leading one
    is bit j, as bx_observe_<q> (billing_metrics_layout.h, the BPF
    programs' linear search) finds it; stats-label-cache checks the two
    agree at and beside every bound and power of two.  With at most one
    bound per power of two (metrics.classic_below), j says how many bounds
    are below x and one compare settles the next, from tables beside the
    native ones when q has them (one base address for both); otherwise a
    binary search over the bounds padded to 2^k - 1 with the largest
    value, which no value exceeds (bounds below 1 are below every such x)."""
    below = metrics.classic_below(q)
    bounds = [f"{b}ULL" for b in q.bounds_raw if b >= 1]
    skipped = len(q.bounds_raw) - len(bounds)
    size = len(bounds) + 1 if below else 2 ** max(1, len(bounds).bit_length()) - 1
    pad = ["UINT64_MAX"] * (size - len(bounds))
    if below:
        tables = f"bx_native_{q.name}_" if q.native else f"bs_classic_{q.name}_"
        o = [] if q.native else [
            f"static const struct {{\n\tunsigned char below[64];\n\tbx_u64 cb[{size}];\n}} bs_classic_{q.name}_ = {{\n"
            "\t{\n" + "".join("\t\t" + ", ".join(str(v) for v in below[i:i + 16]) + ",\n" for i in range(0, 64, 16))
            + "\t},\n\t{ " + ", ".join(bounds + pad) + " }\n};\n\n"]
        o.append(f"static inline bx_u64 bs_bucket_{q.name}(bx_u64 x, bx_u64 j)\n{{\n"
                 f"\tbx_u64 i = {tables}.below[j];\n\n\ti += {tables}.cb[i] < x;\n\treturn i;\n}}\n\n")
        return "".join(o)
    o = [f"static inline bx_u64 bs_bucket_{q.name}(bx_u64 x, bx_u64 j)\n{{\n"
         f"\tstatic const bx_u64 b[{size}] = {{ " + ", ".join(bounds + pad) + " };\n\tbx_u64 i = 0;\n\n\t(void)j;\n"]
    for step in reversed(range(max(1, len(bounds).bit_length()))):
        o.append(f"\ti += (bx_u64)(x > b[i + {2 ** step - 1}]) << {step};\n")
    o.append(f"\treturn i + {skipped};\n}}\n\n" if skipped else "\treturn i;\n}\n\n")
    return "".join(o)


def count_hot(q):
    """bs_count_pos_<q>(): an observation x >= 1 of quantity q into this
    thread's own cells (the first level's hit) without a branch on its
    value, its native cell first (nat: the row's native cells, NULL: none;
    at: where q's start among them).  The bucket is stored last, after a
    compiler barrier (release elsewhere): a reader that sees a classic
    bucket's count sees the native cells it covers, so it re-reads only the
    native cells of classic buckets that changed (docs/stats.md,
    "Reading").  bs_count_<q>() takes any value: x <= 0 (a signed
    quantity's, or 0 of one that measures it) on a cold path."""
    nat = (f"\tif (nat)\n\t\t__atomic_fetch_add(&nat[at + bx_native_index_pos_{q.name}(x, j)], 1, "
           "__ATOMIC_RELAXED);\n" if q.native else "\t(void)nat;\n\t(void)at;\n")
    o = [f"static inline void bs_count_pos_{q.name}(bx_u64 *v, size_t cell, bx_u64 *nat, size_t at, bx_u64 x)\n{{\n"
         "\tbx_u64 j = BX_MSB(x);\n\n" + nat
         + "\tBS_ADD_OWN(v[cell], 1);\n\tBS_ADD_OWN(v[cell + 1], x);\n"
         f"\tBS_ADD_OWN_LAST(v[cell + 2 + bs_bucket_{q.name}(x, j)], 1);\n}}\n\n"]
    if not q.signed and q.unmeasured_zero:  # a 0 is never observed: the positive path is the only one
        return "".join(o)
    native_any = (f"\tif (nat)\n\t\t__atomic_fetch_add(&nat[at + bx_native_index_{q.name}(x)], 1, __ATOMIC_RELAXED);\n"
                  if q.native else "\t(void)nat;\n\t(void)at;\n")
    o.append(f"static inline void bs_count_{q.name}(struct bx_q_{q.name} *q, bx_u64 *nat, size_t at, {q.c_type} x)\n{{\n"
             f"\tif (x > 0) {{\n\t\tbs_count_pos_{q.name}((bx_u64 *)q, 0, nat, at, (bx_u64)x);\n\t\treturn;\n\t}}\n"
             + native_any + "\tBS_STORES_IN_ORDER();\n"
             f"\tbx_observe_{q.name}(q, x, 0);\n}}\n\n")
    return "".join(o)


def native_cells(ms, feed):
    """A row's native cells in feed's map: each value's that declares
    native buckets, the zero bucket and out of range included, in order."""
    return sum(ms.quantities[q].native.buckets + 2 for q in feed.quantities if ms.quantities[q].native)


def native_at(ms, feed):
    """Where each of feed's quantities' native cells start in its row's
    (the description's order)."""
    at, out = 0, {}
    for q in feed.quantities:
        out[q] = at
        n = ms.quantities[q].native
        at += n.buckets + 2 if n else 0
    return out


def cold_values(ms, feed):
    """feed's quantities whose value may be <= 0 when observed: signed, or
    unsigned with 0 a measured value (an unmeasured 0 is not observed)."""
    return [q for q in feed.quantities if ms.quantities[q].signed or not ms.quantities[q].unmeasured_zero]


def count_own(ms, feed, indent, nat, positive=False):
    """A fire counted into this thread's own cells v (nat: the row's
    native cells, or NULL): each quantity (natives before buckets), the
    fire count last.  positive: the cold values are known to be > 0."""
    at = native_at(ms, feed)
    o = []
    for q in feed.quantities:
        qt = ms.quantities[q]
        cell = f"offsetof(struct bx_value_{feed.probe.func}, {q}) / 8"
        call = (f"bs_count_pos_{q}((bx_u64 *)v, {cell}, {nat}, {at[q]}, (bx_u64){q});\n" if positive or not qt.signed
                and qt.unmeasured_zero else f"bs_count_{q}(&v->{q}, {nat}, {at[q]}, {q});\n")
        o.append(f"{indent}if ({q} != 0)\n{indent}\t{call}" if qt.unmeasured_zero else indent + call)
    return "".join(o) + f"{indent}BS_ADD_OWN(v->count, 1);\n"


def count_shared(ms, feed, indent):
    """A fire counted into the overflow slot threads share (atomic adds):
    its native cells first, then (release) the slot's cells."""
    o, width, at = [], native_cells(ms, feed), native_at(ms, feed)
    for q in feed.quantities:
        if not ms.quantities[q].native:
            continue
        guard = f"if ({q} != 0)\n{indent}\t" if ms.quantities[q].unmeasured_zero else ""
        o.append(f"{indent}{guard}bs_native_add_(BX_MAP_{feed.probe.macro}, v, sizeof *v, {width}, "
                 f"{at[q]} + bx_native_index_{q}({q}));\n")
    o.append(f"{indent}BS_STORES_IN_ORDER();\n{indent}BX_ADD(v->count, 1, 1);\n")
    o += [f"{indent}bx_observe_{q}(&v->{q}, {q}, 1);\n" for q in feed.quantities]
    return "".join(o)


def quantity_args(feed):
    """The probe's arguments its quantities read, in billing.d's order."""
    return [n for n, _ in needed_args(feed) if n in feed.quantities]


def hit_body(ms, feed, indent):
    """The first level's hit (e: the entry): the fire counted into this
    thread's own cells.  A value that may be <= 0 and is sends the whole
    fire to hit_<probe>() (cold, a tail call), so the hot path takes no
    branch on a value but a duration's "not measured"; the natives tested
    once."""
    V = f"struct bx_value_{feed.probe.func}"
    width = native_cells(ms, feed)
    cold = cold_values(ms, feed)
    args = ", ".join(quantity_args(feed))
    o = [f"{indent}{V} *v = ({V} *)e->cells;\n"]
    if width:
        o.append(f"{indent}bx_u64 *nat = e->native;\n\n")
    else:
        o.append("\n")
    if cold:
        o.append(f"{indent}if (BS_UNLIKELY({' || '.join(f'{q} <= 0' for q in cold)})) {{\n"
                 f"{indent}\thit_{feed.probe.func}(v, {'nat' if width else 'NULL'}, {args});\n{indent}\treturn;\n{indent}}}\n")
    if width:
        o.append(f"{indent}if (BS_LIKELY(nat)) {{\n" + count_own(ms, feed, indent + "\t", "nat", positive=True)
                 + f"{indent}\treturn;\n{indent}}}\n")
    o.append(count_own(ms, feed, indent, "NULL", positive=True))
    return "".join(o)


def hit_cold(ms, feed):
    """hit_<probe>(): a hit whose value may be <= 0 (cold)."""
    if not cold_values(ms, feed):
        return ""
    V = f"struct bx_value_{feed.probe.func}"
    types = {n: t for n, t, _ in feed.probe.args}
    ps = ", ".join(f"{CTYPE[types[q]]} {q}" for q in quantity_args(feed))
    return (f"static BS_COLD void hit_{feed.probe.func}({V} *v, bx_u64 *nat, {ps})\n{{\n"
            + count_own(ms, feed, "\t", "nat") + "}\n\n")


def l1_arg(feed, arg):
    """A label argument as the first level keys it: a string's address, an
    int's value."""
    types = {n: t for n, t, _ in feed.probe.args}
    return f"(uintptr_t){arg}" if types[arg] == "char *" else f"(uintptr_t)(uint32_t){arg}"


def l1_match(feed, i, arg):
    """A first-level entry's argument i against the fire's: an int's low
    32 bits alone (the argument register's upper half is not the int's)."""
    types = {n: t for n, t, _ in feed.probe.args}
    return (f"e->arg[{i}] == (uintptr_t){arg}" if types[arg] == "char *" else
            f"(uint32_t)e->arg[{i}] == (uint32_t){arg}")


def first_string(feed):
    """The index of feed's first string label field, or None: an entry of
    the first level whose argument there is 0 is empty (a NULL string is
    never cached), so a hit needs no other test."""
    types = {n: t for n, t, _ in feed.probe.args}
    return next((i for i, a in enumerate(feed.fields) if types[a] == "char *"), None)


def stats_gen_c(provider, ms):
    o = [BANNER,
         "/* The stats writer's generated half: lib/stats_writer.c is the other.  Each\n"
         " * billing_stats_<probe>() looks its label arguments up in this thread's\n"
         " * first-level cache (stats_writer.h): a hit counts at once; a miss\n"
         " * (miss_<probe>) builds the key from the labels' bytes, counts through\n"
         " * bs_cells_(), and caches the arguments when every string is a literal. */\n"
         "#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n"
         "#include \"stats_writer.h\" /* BX_ADD as this thread's relaxed store, bs_cells_() */\n"
         "#include \"billing/stats_gen.h\"\n\n"
         "#if defined(__GNUC__)\n#  define BS_COLD __attribute__((noinline, cold))\n"
         "#  define BS_LIKELY(x) __builtin_expect(!!(x), 1)\n#  define BS_UNLIKELY(x) __builtin_expect(!!(x), 0)\n"
         "#else\n#  define BS_COLD\n#  define BS_LIKELY(x) (x)\n#  define BS_UNLIKELY(x) (x)\n#endif\n\n"]
    for q in ms.quantities.values():
        o.append(classic_bucket(q))
        o.append(count_hot(q))
    for f in ms.feeds:
        types = {n: t for n, t, _ in f.probe.args}
        strings = [a for a in f.fields if types[a] == "char *"]
        key_string = first_string(f)
        width = native_cells(ms, f)
        slot = f"bs_l1_slot_({' ^ '.join(l1_arg(f, a) for a in f.fields) or '0'})"
        match = " && ".join(l1_match(f, i, a) for i, a in enumerate(f.fields))
        if key_string is None:  # no string to mark an entry empty: its cells do
            match = " && ".join(["e->cells"] + ([match] if match else []))
        match = match or "e->cells"
        V = f"struct bx_value_{f.probe.func}"
        o.append(hit_cold(ms, f))
        o.append(f"static BS_COLD void miss_{f.probe.func}({params(f)})\n{{\n"
                 f"\tstruct bx_key_{f.probe.func} k;\n\t{V} *v;\n"
                 f"\tsize_t slot = {slot};\n\tbs_l1_entry_t *e;\n\tint shared;\n\n"
                 "\t/* Label sets that share an entry: the others sit in the rest of its group. */\n"
                 "\tfor (size_t w = 1; bs_self_ && w < BS_L1_WAYS; w++) {\n"
                 f"\t\te = &bs_self_->l1[BX_MAP_{f.probe.macro}][slot ^ w];\n"
                 f"\t\tif ({match}) {{\n\t\t\tv = ({V} *)e->cells;\n"
                 + count_own(ms, f, "\t\t\t", "e->native" if width else "NULL") + "\t\t\treturn;\n\t\t}\n\t}\n"
                 "\tmemset(&k, 0, sizeof k);\n")
        o += metrics.count_fire(f, lambda a: f"bs_copy_label_(k.{a}, {a}, sizeof k.{a})", lambda a: f"k.{a} = {a}",
                                "", lambda q: "")[:len(f.fields)]
        o.append(f"\tv = ({V} *)bs_cells_(BX_MAP_{f.probe.macro}, &k, sizeof k, sizeof *v / 8, &shared);\n"
                 "\tif (!v)\n\t\treturn;\n\tif (shared) {\n" + count_shared(ms, f, "\t\t") + "\t\treturn;\n\t}\n"
                 + (f"\tbx_u64 *nat = bs_native_row_(BX_MAP_{f.probe.macro}, v, sizeof *v, {width});\n\n"
                    if width else "\tbx_u64 *nat = NULL;\n\n")
                 + count_own(ms, f, "\t", "nat"))
        cond = [f"!bs_immutable_({a})" for a in strings]
        if key_string is not None:
            cond.insert(0, f"!{f.fields[key_string]}")
        o.append(("\tif (" + " || ".join(cond) + ")\n\t\treturn;\n" if cond else "")
                 + "\t/* its own entry, else the first free one of its group, else its own again */\n"
                 f"\te = &bs_self_->l1[BX_MAP_{f.probe.macro}][slot];\n"
                 "\tfor (size_t w = 1; e->cells && w < BS_L1_WAYS; w++)\n"
                 f"\t\te = &bs_self_->l1[BX_MAP_{f.probe.macro}][slot ^ w];\n"
                 f"\tif (e->cells)\n\t\te = &bs_self_->l1[BX_MAP_{f.probe.macro}][slot];\n"
                 + "".join(f"\te->arg[{i}] = {l1_arg(f, a)};\n" for i, a in enumerate(f.fields))
                 + "\te->native = nat;\n\te->cells = v;\n}\n\n")
        args = ", ".join(n for n, _ in needed_args(f))
        # stats_<probe>_: the same function by a name of this library's own,
        # which the timing helpers below call directly (not through the PLT)
        o.append(f"void billing_stats_{f.probe.func}({params(f)})\n{{\n"
                 f"\tconst bs_l1_entry_t *e = &bs_l1_[BX_MAP_{f.probe.macro}][{slot}];\n\n"
                 f"\tif (BS_LIKELY({match})) {{\n" + hit_body(ms, f, "\t\t") + "\t\treturn;\n\t}\n"
                 f"\tmiss_{f.probe.func}({args});\n}}\n"
                 f"BS_HIDDEN extern __typeof__(billing_stats_{f.probe.func}) stats_{f.probe.func}_ "
                 f"__attribute__((alias(\"billing_stats_{f.probe.func}\")));\n\n")
    o.append(trail_emit.gen_c(ms))
    o.append(timing_helpers(provider, ms))
    return "".join(o)


def timing_helpers(provider, ms):
    """The timing helpers (billing/timing.h) of a stats build, here, where
    what their probes keep is inline (timing_gen.c has them for a build
    without stats).  While the stats count, neither probe of the pair is
    traced and spans are timed by the time-stamp counter, begin reads the
    counter once for the span and the start's trail event; end reads it
    once for the duration and the done's event, then counts the done probe
    (its one call: billing_stats_<probe>() by its hidden name).  What the trail cannot
    do fast (or a ratio of the clocks to read again) goes out of line as
    the last thing done, so nothing is saved and restored on the way.
    Traced, or with the stats off, they do what timing_gen.c's do."""
    o = ["/* --- the timing helpers of a stats build (billing/timing.h) --- */\n\n"
         "#include \"billing/probes.h\"\n#include \"billing/timing.h\"\n"
         "#include \"span_clock.h\" /* the span clock, inline */\n\n#if BILLING_STATS_BUILD_\n\n"]
    for sp in spans(provider.probes):
        start, done = sp.start, sp.done
        kept = {n for n, _, _ in sp.kept}
        start_args = ", ".join(n for n, _, _ in start.args)
        end_args = ", ".join(["span"] + [n for n, _, _ in sp.extra])

        def on_span(n):
            return f"span->{n}" if n in kept else n
        done_args = ", ".join(on_span(n) for n, _, _ in done.args)
        counted = any(f.probe is done for f in ms.feeds)  # done's clock read while the stats are on
        start_feed = next((f for f in ms.feeds if f.probe is start), None)
        done_feed = next((f for f in ms.feeds if f.probe is done), None)
        go = "BS_LIKELY(__atomic_load_n(&bs_trail_go_, __ATOMIC_RELAXED))"
        o.append(f"static BS_COLD void begin_other_{sp.base}({sp.begin_params()})\n{{\n"
                 f"\tif (BILLING_{start.macro}_ENABLED()) {{\n\t\tspan->start_ns = bs_span_start_(1);\n"
                 f"\t\tBILLING_{start.macro}({start_args});\n\t\treturn;\n\t}}\n"
                 f"\tbs_span_start_at_(&span->start_ns, BILLING_{done.macro}_ENABLED());\n}}\n\n")
        o.append(f"void billing_{sp.base}_begin({sp.begin_params()})\n{{\n")
        o += [f"\tspan->{n} = {n};\n" for n, _, _ in sp.kept]
        if counted:
            o.append(f"#if BS_SPAN_TSC\n\tif (BS_LIKELY(!BILLING_SDT_{start.macro}_ENABLED() && "
                     "__atomic_load_n(&bs_span_fast_, __ATOMIC_RELAXED))) {\n"
                     "\t\tuint64_t ticks = __builtin_ia32_rdtsc();\n\n\t\tspan->start_ns = ticks | BS_SPAN_MARK;\n")
            if start_feed:
                o.append(f"\t\tstats_{start.func}_({', '.join(n for n, _ in needed_args(start_feed))});\n")
            if start.d_name == "request__start":
                o.append(f"\t\ttrail_start_at_(ticks, {start_args});\n")
            else:
                o.append(f"\t\tif ({go}) {{\n\t\t\tif (!trail_try_{start.func}_(ticks, {start_args}))\n"
                         f"\t\t\t\ttrail_slow_{start.func}_({start_args});\n"
                         f"\t\t}} else if (BILLING_TRAIL_OPEN_()) {{\n\t\t\tbilling_trail_{start.func}({start_args});\n\t\t}}\n")
            o.append("\t\treturn;\n\t}\n#endif\n")
        o.append(f"\tbegin_other_{sp.base}(span, {start_args});\n}}\n\n")
        o.append(f"static BS_COLD uint64_t end_other_{sp.base}({sp.end_params()})\n{{\n"
                 f"\tuint64_t duration_ns;\n\n\tif (!BILLING_{done.macro}_ENABLED())\n\t\treturn 0;\n"
                 f"\tduration_ns = bs_span_ns_(span->start_ns);\n"
                 f"\tBILLING_{done.macro}({done_args});\n\treturn duration_ns;\n}}\n\n")
        if counted:
            count = f"stats_{done.func}_({', '.join(on_span(n) for n, _ in needed_args(done_feed))})"
            o.append(f"/* the end of a span whose trail event goes the slow way, counted after it */\n"
                     f"static BS_COLD uint64_t end_slow_{sp.base}({sp.end_params()}, uint64_t duration_ns)\n{{\n"
                     f"\tif ({go})\n\t\ttrail_slow_{done.func}_({done_args});\n"
                     f"\telse\n\t\tbilling_trail_{done.func}({done_args});\n"
                     f"\t{count};\n\treturn duration_ns;\n}}\n\n")
        o.append(f"uint64_t billing_{sp.base}_end({sp.end_params()})\n{{\n")
        if counted:
            o.append("#if BS_SPAN_TSC\n\tuint64_t start = span->start_ns, ticks, duration_ns;\n\n"
                     f"\tif (BS_LIKELY(!BILLING_SDT_{done.macro}_ENABLED() && "
                     "__atomic_load_n(&bs_span_fast_, __ATOMIC_RELAXED) && (start & BS_SPAN_MARK) &&\n"
                     "\t              bs_span_ns_fast_(start, ticks = __builtin_ia32_rdtsc(), &duration_ns))) {\n"
                     f"\t\tif ({go} ? !trail_try_{done.func}_(ticks, {done_args}) : BILLING_TRAIL_OPEN_())\n"
                     f"\t\t\treturn end_slow_{sp.base}({end_args}, duration_ns);\n"
                     f"\t\t{count};\n\t\treturn duration_ns;\n\t}}\n#endif\n")
        o.append(f"\treturn end_other_{sp.base}({end_args});\n}}\n\n")
    return "".join(o) + "#endif\n"


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

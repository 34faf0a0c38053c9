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

BANNER = metrics.HEADER_BANNER
CTYPE = {"unsigned long long": "uint64_t", "long long": "int64_t", "int": "int32_t", "char *": "const char *"}


def needed_args(feed):
    """The probe's arguments its metrics read, in billing.d's order."""
    used = set(feed.fields) | set(feed.quantities)
    return [(n, t) for n, t, _ in feed.probe.args if n in used]


def params(feed):
    return ", ".join(f"{CTYPE[t]}{'' if t == 'char *' else ' '}{n}" for n, t in needed_args(feed)) or "void"


def description(ms):
    """The segment's self-description: everything a reader needs to decode
    a segment, as text.  A reader accepts a segment only when it is exactly
    its own (docs/stats.md)."""
    lines = ["billing-stats layout 2"]
    for arg, values in ms.known.items():
        lines.append(f"known {arg} {','.join(values)}")
    for q in ms.quantities.values():
        lines.append(f"quantity {q.name} unit={q.unit.replace(' ', '_')} divide={q.divide} "
                     f"unmeasured_zero={int(q.unmeasured_zero)} signed={int(q.signed)} "
                     f"le={','.join(q.bounds_text)}")
    for f in ms.feeds:
        fields, pad = metrics.key_layout(ms, f)
        cells = 1 + sum(3 + len(ms.quantities[q].bounds_raw) for q in f.quantities)
        lines.append(f"map {f.map_name} probe={f.probe.d_name} group={f.group} key={sum(n for *_, n in fields) + pad} "
                     f"cells={cells}")
        lines += [f"field {arg} {'string' if kind == 'BX_KEY_STRING' else 'int32'} {size}"
                  for _, arg, kind, size in fields]
        lines += [f"value {q}" for q in f.quantities]
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
    o.append("#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
    return "".join(o)


def stats_gen_c(provider, ms):
    o = [BANNER,
         "/* The stats writer's generated half: lib/stats.c is the other. */\n"
         "#include <stdint.h>\n#include <string.h>\n\n"
         "#include \"stats_writer.h\" /* BX_ADD as this thread's relaxed store, bs_cells_() */\n"
         "#include \"billing/stats_gen.h\"\n\n"]
    for f in ms.feeds:
        o.append(f"void billing_stats_{f.probe.func}({params(f)})\n{{\n"
                 f"\tstruct bx_key_{f.probe.func} k;\n\tstruct bx_value_{f.probe.func} *v;\n\tint shared;\n\n"
                 "\tmemset(&k, 0, sizeof k);\n")
        o += metrics.count_fire(f, lambda a: f"bs_copy_label_(k.{a}, {a}, sizeof k.{a})", lambda a: f"k.{a} = {a}",
                                f"v = (struct bx_value_{f.probe.func} *)bs_cells_(BX_MAP_{f.probe.macro}, &k, "
                                "sizeof k, sizeof *v / 8, &shared);\n\tif (!v)\n\t\treturn;\n"
                                "\tBX_ADD(v->count, 1, shared)",
                                lambda q: f"bx_observe_{q}(&v->{q}, {q}, shared)")
        o.append("}\n\n")
    return "".join(o)


def stats_desc_c(provider, ms):
    """The description alone: the writer puts it in each segment, the
    reader compares a segment's with it."""
    o = [BANNER + '#include <stddef.h>\n\n#include "stats_segment.h"\n\nconst char billing_stats_desc_[] =\n'
         + "".join(f"\t{metrics.c_string(l)[:-1]}\\n\"\n" for l in description(ms).splitlines()) + "\t;\n\n"]
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
                 f"{rows}, {' + '.join(base) or '0'}, {len(fields)}, {{ {fl} }} }},\n")
        base.append(f"({rows})")
    o.append("};\n\n")
    return "".join(o)


COMMANDS = {
    "stats-desc-c": stats_desc_c,
    "stats-gen-h": stats_gen_h,
    "stats-gen-c": stats_gen_c,
}

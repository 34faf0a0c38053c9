"""The tests' samples, from billing.d: every probe fired with known
arguments (probe-samples-h, a header the test programs include) and what
a consumer must see for them (probe-samples-json).  Not installed.
"""

import json

from billing_d import TYPES, ProviderError, spans

BANNER = "/* Generated from provider/billing.d by provider/generate.py: do not edit. */\n"

SAMPLE_ROUNDS = 3
TIMING_TAG = 500  # added to a tag when a timing helper fires the probe


def sample(index, probe, arg_index, k, via="macro"):
    """(C expression, value a consumer sees) of argument ARG_INDEX of PROBE
    (billing.d's INDEX-th) in round K, fired through a macro or a timing helper.

    Distinct per probe, argument and way of firing, so a consumer that reads
    the wrong argument or the wrong probe fails; across the rounds each type
    meets its edges: beyond 32 bits, beyond 2^63, negative, NULL, not UTF-8."""
    name, d_type, _ = probe.args[arg_index]
    tag = 1000 * (index + 1) + 10 * arg_index + k + (TIMING_TAG if via == "timing" else 0)
    if d_type == "unsigned long long":
        v = [tag, 1000 * 2**32 + tag, 18 * 10**18 + tag][k]
        return f"{v}ull", v
    if d_type == "long long":
        v = [-tag, tag, -9 * 10**18 - tag][k]
        return f"{v}ll", v
    if d_type == "int":
        v = [tag, -tag, 2**31 - 1 - tag][k]
        return str(v), v
    if d_type == "char *":
        if k == 0:
            return "NULL", b""
        text = f"{probe.name}.{name}" + ("@timing" if via == "timing" else "")
        v = text.encode() if k == 1 else b"caf\xc3\xa9-\xff-" + text.encode()
        return '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}"
                             for b in v) + '"', v
    raise ProviderError(f"probe {probe.name}: no sample for type {d_type!r}")


def samples_by_probe(provider):
    """{d_name: (index, probe)} in billing.d's order."""
    return {p.d_name: (i, p) for i, p in enumerate(provider.probes)}


def paired_names(provider):
    return {p.d_name for sp in spans(provider.probes) for p in (sp.start, sp.done)}


def probe_samples_h(provider):
    o = [BANNER, "/* Every probe of billing.d fired with sample arguments, for the tests.\n"
         " * Round k (0 <= k < BILLING_SAMPLE_ROUNDS) passes what probe_samples.json\n"
         " * lists for round k.  Define BILLING_SAMPLE_COUNT(x) before the include to\n"
         " * see each macro's first argument evaluated (it must be, only while traced). */\n",
         "#ifndef BILLING_PROBE_SAMPLES_H\n#define BILLING_PROBE_SAMPLES_H\n\n"
         "#include <stddef.h>\n#include <stdint.h>\n\n"
         '#include "billing/probes.h"\n#include "billing/timing.h"\n\n'
         "#ifndef BILLING_SAMPLE_COUNT\n#define BILLING_SAMPLE_COUNT(x) (x)\n#endif\n\n"
         f"#define BILLING_SAMPLE_ROUNDS {SAMPLE_ROUNDS}\n\n"]

    def array(via, probe, name):
        return f"{name}_" if via == "macro" else f"{probe.func}_{name}_"

    def arrays(index, probe, via, indices):
        out = []
        for i in indices:
            name, t, _ = probe.args[i]
            ctype = "const char *const" if t == "char *" else "const " + TYPES[t][0]
            values = ", ".join(sample(index, probe, i, k, via)[0] for k in range(SAMPLE_ROUNDS))
            out.append(f"\tstatic {ctype} {array(via, probe, name)}[BILLING_SAMPLE_ROUNDS] = {{ {values} }};\n")
        return out

    for index, p in enumerate(provider.probes):
        args = [f"{array('macro', p, n)}[k]" for n, _, _ in p.args]
        if args:
            args[0] = f"BILLING_SAMPLE_COUNT({args[0]})"
        o.append(f"static BILLING_PROBE_INLINE_ void billing_sample_{p.func}(int k)\n{{\n")
        o += arrays(index, p, "macro", range(len(p.args)))
        o.append(f"\tBILLING_{p.macro}({', '.join(args)});\n}}\n\n")
    o.append(enabled_table(provider))
    paired = paired_names(provider)
    for fn, which, what in (("fire_all", provider.probes, "Every probe through its macro"),
                            ("fire_unpaired", [p for p in provider.probes if p.d_name not in paired],
                             "The probes no timing helper fires, through their macros")):
        o.append(f"/* {what}, in billing.d's order. */\n"
                 f"static BILLING_PROBE_INLINE_ void billing_sample_{fn}(int k)\n{{\n")
        o += [f"\tbilling_sample_{p.func}(k);\n" for p in which]
        o.append("}\n\n")
    index_of = samples_by_probe(provider)
    pairs = spans(provider.probes)
    o.append("/* Every timing helper pair, nested: begin with the -start probe's samples,\n"
             " * end (in reverse order) with the -done probe's own arguments. */\n"
             "static BILLING_PROBE_INLINE_ void billing_sample_fire_timing(int k)\n{\n")
    for sp in pairs:
        o.append(f"\tbilling_{sp.base}_t span_{sp.start.func}_;\n")
    for sp in pairs:
        o += arrays(index_of[sp.start.d_name][0], sp.start, "timing", range(len(sp.start.args)))
    for sp in pairs:
        o += arrays(index_of[sp.done.d_name][0], sp.done, "timing", [sp.done.args.index(a) for a in sp.extra])
    for sp in pairs:
        o.append(f"\tbilling_{sp.base}_begin(&span_{sp.start.func}_"
                 + "".join(f", {array('timing', sp.start, n)}[k]" for n, _, _ in sp.start.args) + ");\n")
    for sp in reversed(pairs):
        o.append(f"\t(void)billing_{sp.base}_end(&span_{sp.start.func}_"
                 + "".join(f", {array('timing', sp.done, n)}[k]" for n, _, _ in sp.extra) + ");\n")
    o.append("}\n\n#endif\n")
    return "".join(o)


def enabled_table(provider):
    """billing_sample_enabled(i, ...): probe I's name, whether it feeds the
    stats, and its BILLING_<PROBE>_ENABLED() now, so a test can go through
    every probe without naming one."""
    fed = {f.probe.d_name for f in provider.metrics.feeds}
    o = [f"#define BILLING_SAMPLE_PROBES {len(provider.probes)}\n\n"
         "/* Probe I of billing.d, in its order (0 <= I < BILLING_SAMPLE_PROBES): its name,\n"
         " * whether it feeds the stats (billing.d's \"@@\" lines), and whether its\n"
         " * BILLING_<PROBE>_ENABLED() is true now (-1: no such probe). */\n"
         "static BILLING_PROBE_INLINE_ int billing_sample_enabled(int i, const char **name, int *feeds_stats)\n{\n"
         "\tswitch (i) {\n"]
    for i, p in enumerate(provider.probes):
        o.append(f"\tcase {i}:\n\t\t*name = \"{p.name}\";\n\t\t*feeds_stats = {int(p.d_name in fed)};\n"
                 f"\t\treturn BILLING_{p.macro}_ENABLED() != 0;\n")
    o.append("\tdefault:\n\t\t*name = \"\";\n\t\t*feeds_stats = 0;\n\t\treturn -1;\n\t}\n}\n\n")
    return "".join(o)


def probe_samples_json(provider):
    """What a consumer sees for each round of probe_samples.h.

    Integers as JSON numbers; strings one character per byte (decode with
    latin-1), NULL as ""; a measured duration (timing helpers) as null."""
    span_of = {}  # start's and done's name -> their Span
    for sp in spans(provider.probes):
        span_of[sp.start.d_name] = span_of[sp.done.d_name] = sp
    index_of = samples_by_probe(provider)
    out = []

    def text(v):
        return v.decode("latin-1") if isinstance(v, bytes) else v

    for index, p in enumerate(provider.probes):
        entry = {"name": p.name, "d_name": p.d_name,
                 "args": [{"name": n, "type": TYPES[t][1]} for n, t, _ in p.args],
                 "macro": [[text(sample(index, p, i, k)[1]) for i in range(len(p.args))]
                           for k in range(SAMPLE_ROUNDS)],
                 "timing": None}
        if p.d_name in span_of:
            start, done = span_of[p.d_name].start, span_of[p.d_name].done
            si = index_of[start.d_name][0]
            start_names = [n for n, _, _ in start.args]
            rounds = []
            for k in range(SAMPLE_ROUNDS):
                values = []
                for i, (n, _, _) in enumerate(p.args):
                    if p is done and i == len(p.args) - 1:
                        values.append(None)  # duration_ns: measured
                    elif n in start_names:  # start's own, or kept by begin
                        values.append(text(sample(si, start, start_names.index(n), k, "timing")[1]))
                    else:
                        values.append(text(sample(index, p, i, k, "timing")[1]))
                rounds.append(values)
            entry["timing"] = rounds
        out.append(entry)
    return json.dumps({"provider": provider.name, "rounds": SAMPLE_ROUNDS, "probes": out}, indent=1) + "\n"

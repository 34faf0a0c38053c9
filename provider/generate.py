#!/usr/bin/env python3
"""Generate everything that names a probe or its arguments from provider/billing.d.

billing.d is the single source of truth.  This script reads its probe
declarations and the doc comment above each, and writes one file per
command; a command is named after the file it writes (probe-macros-h
writes probe_macros.h), so meson loops over the names:

  probes-sdt-h DTRACE_H OUT  dtrace -h output renamed into BILLING_SDT_*, const strings,
                             arguments never immediates
  probes-off-h OUT           the same macros as no-ops, for builds without probes
  probe-macros-h OUT         the public BILLING_<PROBE>() / _ENABLED() wrappers
  ffi-prototypes-h OUT  declarations of billing_fire_<probe>() for callers that
                             cannot use C macros (FFI from Python, Go, Rust, ...)
  ffi-usdt-sites-c OUT      their definitions, compiled into libbillingprobes-ffi
  function-site-macros-h OUT      function probe sites (-Dprobe_site=function): the
                             BILLING_SDT_*() layer as calls of billing_fire_<probe>()
  function-sites-c OUT       those functions as sites: empty, never inlined or cloned
                             (lib/function_site.h); docs/function-sites.md
  timing-gen-h OUT           a begin/end timing helper per NAME-start/NAME-done pair
  timing-gen-c OUT           their definitions, compiled into libbillingprobes
  catalogue-data-c OUT       the C table behind billing_catalogue()
  probe-samples-h OUT        tests: every probe fired with sample arguments
  probe-samples-json OUT     tests: the values consumers must see for those samples
  probe-table OUT            the Markdown probe reference of docs/probes.md
  billing-metrics-layout-h OUT  the metrics' keys, values and observe functions (metrics.py)
  billing-exporter-programs-h OUT  billing-exporter's BPF maps and programs
  metric-table-gen-h OUT     billing-exporter's metric table
  stats-gen-h OUT            billing_stats_<probe>(): the stats writer's entry points
  stats-gen-c OUT            their definitions and the segment's self-description
  check-probe-table DOC      exit 1 unless DOC holds the current probe reference
  update-probe-table DOC     rewrite the probe reference between DOC's markers

OUT may be "-" for stdout.  Usage: generate.py PROVIDER.d COMMAND [ARGS...]
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402  the metrics the probes feed (the "@@" lines)
import stats_emit  # noqa: E402  the stats writer's generated half

# D base type -> (C type in the public API, catalogue type name)
TYPES = {
    "unsigned long long": ("uint64_t", "uint64"),
    "long long": ("int64_t", "int64"),
    "int": ("int32_t", "int32"),
    "char *": ("const char *", "string"),
}

MAX_ARGS = 6  # bpftrace reads arg0..arg5 of a USDT probe on x86-64
TABLE_BEGIN = "<!-- probe-table: generated from provider/billing.d by provider/generate.py -->"
TABLE_END = "<!-- /probe-table -->"
BANNER = "/* Generated from provider/billing.d by provider/generate.py: do not edit. */\n"


class ProviderError(Exception):
    pass


class Provider:
    def __init__(self, path, name, probes):
        self.path = path        # provider/billing.d as given
        self.name = name        # billing
        self.probes = probes    # [Probe] in billing.d's order


class Probe:
    def __init__(self, d_name, summary, args):
        self.d_name = d_name                        # request__start
        self.name = d_name.replace("__", "-")        # request-start
        self.macro = d_name.replace("__", "_").upper()  # REQUEST_START
        self.func = d_name.replace("__", "_")        # request_start
        self.summary = summary                      # "a request handler begins ..."
        self.args = args                            # [(name, d_type, doc)]
        self.metric_lines = []                      # its "@@" doc lines (metrics.py)


def parse(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"\bprovider\s+([A-Za-z_]\w*)\s*\{(.*?)\n\};", text, re.S)
    if not m:
        raise ProviderError(f"{path}: no 'provider NAME {{ ... }};' block")
    provider, body = m.group(1), m.group(2)
    probes = []
    pattern = re.compile(r"/\*\*(.*?)\*/\s*probe\s+(\w+)\s*\(([^)]*)\)\s*;", re.S)
    for doc, d_name, params in pattern.findall(body):
        lines = [re.sub(r"^\s*\*\s?", "", l).strip() for l in doc.strip().splitlines()]
        lines = [l for l in lines if l]
        name = d_name.replace("__", "-")
        head = re.match(r"([\w-]+):\s*(.+)", lines[0]) if lines else None
        if not head or head.group(1) != name:
            raise ProviderError(f"{path}: probe {name}: doc comment must start with '{name}: ...'")
        arg_docs = []
        # "@@" lines and the help text under them: the metrics the probe
        # feeds (provider/metrics.py reads them).
        first_metric = next((i for i, l in enumerate(lines) if l.startswith("@@")), len(lines))
        metric_lines = lines[first_metric:]
        for l in lines[1:first_metric]:
            am = re.match(r"@(\w+)\s+(.+)", l)
            if not am:
                raise ProviderError(f"{path}: probe {name}: unexpected doc line {l!r}")
            arg_docs.append((am.group(1), am.group(2)))
        types = [t.strip() for t in params.split(",")] if params.strip() else []
        for t in types:
            if re.sub(r"\s+", " ", t) not in TYPES:
                raise ProviderError(f"{path}: probe {name}: type {t!r} is not one of {sorted(TYPES)}")
        if len(types) != len(arg_docs):
            raise ProviderError(f"{path}: probe {name}: {len(types)} arguments but {len(arg_docs)} @arg lines")
        if len(types) > MAX_ARGS:
            raise ProviderError(f"{path}: probe {name}: {len(types)} arguments, at most {MAX_ARGS}")
        args = [(an, re.sub(r"\s+", " ", t), ad) for (an, ad), t in zip(arg_docs, types)]
        probes.append(Probe(d_name, head.group(2), args))
        probes[-1].metric_lines = metric_lines
    declared = re.findall(r"\bprobe\s+(\w+)\s*\(", body)
    if len(declared) != len(probes):
        documented = {p.d_name for p in probes}
        missing = [d for d in declared if d not in documented]
        raise ProviderError(f"{path}: probes without a doc comment: {', '.join(missing)}")
    if not probes:
        raise ProviderError(f"{path}: provider {provider} declares no probes")
    try:
        span_pairs(probes)  # every output agrees on what a start/done pair is
    except ProviderError as e:
        raise ProviderError(f"{path}: {e}") from None
    result = Provider(path, provider, probes)
    try:
        result.metrics = metrics.parse(result, text)
    except metrics.MetricError as e:
        raise ProviderError(str(e)) from None
    return result


def probes_sdt_h(provider, dtrace_h):
    """dtrace -h's PROVIDER_PROBE macros renamed into our BILLING_SDT_ namespace."""
    text = open(dtrace_h, encoding="utf-8").read()
    prefix = provider.name.upper() + "_"
    for p in provider.probes:
        text = re.sub(r"\b%s%s(_ENABLED)?\b" % (prefix, p.macro),
                      lambda m: "BILLING_SDT_" + p.macro + (m.group(1) or ""), text)
    # Strings are read-only at every probe site; the C++ build needs the const.
    text = re.sub(r"(?<!const )\bchar \*", "const char *", text)
    # Every module links its own hidden semaphores (dtrace -G's object, or
    # libbillingprobes_semaphores.a): saying so lets the compiler address
    # them PC-relative, a compare and a branch per untraced site.
    text = re.sub(r"(extern unsigned short \w+_semaphore[^;]*?)\s*;",
                  r'\1 __attribute__ ((visibility ("hidden")));', text)
    if "#include <sys/sdt.h>" not in text:
        raise ProviderError(f"{dtrace_h}: dtrace -h output does not include <sys/sdt.h>")
    text = text.replace("#include <sys/sdt.h>", ARG_CONSTRAINT + "#include <sys/sdt.h>", 1)
    return BANNER + "/* Post-processed output of dtrace -h. */\n" + text


# sys/sdt.h lets the compiler pass an argument as an immediate ("n"): a
# constant argument becomes `-8@$1250` in the note.  bpftrace and gdb read
# that, perf drops the argument.  Register or memory only, so every
# consumer sees every argument; the constant is moved into a register
# behind the semaphore, so an untraced site costs the same.  sys/sdt.h
# reads the macro where a probe expands, so this also holds when the
# application included sys/sdt.h first.
ARG_CONSTRAINT = """/* Probe arguments in registers or memory, never immediates (perf drops
 * those): see ARG_CONSTRAINT in provider/generate.py. */
#undef STAP_SDT_ARG_CONSTRAINT
#if defined __powerpc__
#define STAP_SDT_ARG_CONSTRAINT Zr
#elif defined __ia64__
#define STAP_SDT_ARG_CONSTRAINT r
#elif defined __arm__
#define STAP_SDT_ARG_CONSTRAINT rm
#else
#define STAP_SDT_ARG_CONSTRAINT or
#endif
"""


def sdt_layer_h(provider, guard, preamble, enabled, expansion, includes=""):
    """A BILLING_SDT_<PROBE>() layer that billing/probes.h wraps: each
    probe's _ENABLED() is ENABLED, its macro expands to EXPANSION(probe,
    parameter names)."""
    o = [BANNER, preamble, f"#ifndef {guard}\n#define {guard}\n\n", includes]
    for p in provider.probes:
        params = [f"a{i}" for i in range(len(p.args))]
        o.append(f"#define BILLING_SDT_{p.macro}_ENABLED() ({enabled})\n")
        o.append(f"#define BILLING_SDT_{p.macro}({', '.join(params)}) {expansion(p, params)}\n")
    o.append("\n#endif\n")
    return "".join(o)


def probes_off_h(provider):
    return sdt_layer_h(provider, "BILLING_PROBES_OFF_H",
                       "/* Probes compiled out: every probe is a no-op that still uses its arguments. */\n",
                       0, lambda p, params: "(" + ", ".join(f"(void)({a})" for a in params) + ")")


def probe_macros_h(provider):
    o = [BANNER, "/* Included by billing/probes.h; include that instead. */\n",
         "#ifndef BILLING_PROBE_MACROS_H\n#define BILLING_PROBE_MACROS_H\n\n"]
    for p in provider.probes:
        names = [a[0] for a in p.args]
        params = function_params(p)
        fire_args = ", ".join(f"BILLING_PROBE_STR_({n})" if t == "char *" else n for n, t, _ in p.args)
        checks = "".join(f"\t\tBILLING_PROBE_INTEGER_({n}); \\\n" for n, t, _ in p.args if t != "char *")
        call_args = ", ".join(f"({n})" for n in names)
        o.append(f"/* {p.name}: {p.summary}\n")
        for n, t, d in p.args:
            o.append(f" *   {n} ({TYPES[t][1]}): {d}\n")
        o.append(" */\n")
        o.append(f"static BILLING_PROBE_INLINE_ void billing_probe_fire_{p.func}_({params})\n{{\n"
                 f"\tBILLING_SDT_{p.macro}({fire_args});\n}}\n")
        o.append(f"#define BILLING_{p.macro}_ENABLED() BILLING_SDT_{p.macro}_ENABLED()\n")
        feed = next((f for f in provider.metrics.feeds if f.probe is p), None)
        if feed:
            # A stats build counts every fire (its arguments evaluated
            # always), and fires the USDT site too while it is traced.
            stats_args = ", ".join(n for n, _ in stats_emit.needed_args(feed))
            o.append(f"#if BILLING_STATS_BUILD_\nstatic BILLING_PROBE_INLINE_ void "
                     f"billing_probe_stats_{p.func}_({params})\n{{\n"
                     f"\tif (BILLING_STATS_ON_())\n\t\tbilling_stats_{p.func}({stats_args});\n"
                     f"\tif (BILLING_{p.macro}_ENABLED())\n\t\tbilling_probe_fire_{p.func}_({', '.join(names)});\n}}\n"
                     f"#define BILLING_{p.macro}({', '.join(names)}) \\\n\tdo {{ \\\n{checks}"
                     f"\t\tbilling_probe_stats_{p.func}_({call_args}); \\\n\t}} while (0)\n#else\n")
        o.append(f"#define BILLING_{p.macro}({', '.join(names)}) \\\n\tdo {{ \\\n{checks}"
                 f"\t\tif (BILLING_{p.macro}_ENABLED()) \\\n"
                 f"\t\t\tbilling_probe_fire_{p.func}_({call_args}); \\\n\t}} while (0)\n")
        o.append("#endif\n\n" if feed else "\n")
    o.append("#endif\n")
    return "".join(o)


def function_params(p):
    return ", ".join(c_decl(a) for a in p.args)


def ffi_prototypes_h(provider):
    """The prototypes of billing_fire_<probe>() and billing_enabled_<probe>(),
    for callers through an FFI (included by billing/probe_functions.h)."""
    o = [BANNER, "/* Included by billing/probe_functions.h; include that instead. */\n",
         "#ifndef BILLING_FFI_PROTOTYPES_H\n#define BILLING_FFI_PROTOTYPES_H\n\n"]
    for p in provider.probes:
        o.append(f"/* {p.name}: {p.summary} */\n")
        o.append(f"void billing_fire_{p.func}({function_params(p)});\n")
        o.append(f"int billing_enabled_{p.func}(void);\n\n")
    o.append("#endif\n")
    return "".join(o)


def ffi_usdt_sites_c(provider):
    """billing_fire_<probe>() as a USDT site each: libbillingprobes-ffi's
    functions in a USDT build (function_sites.c's in a function-site one)."""
    o = [BANNER, '#include "billing/probes.h"\n#include "billing/probe_functions.h"\n\n']
    for p in provider.probes:
        names = ", ".join(n for n, _, _ in p.args)
        o.append(f"void billing_fire_{p.func}({function_params(p)})\n{{\n"
                 f"\tBILLING_{p.macro}({names});\n}}\n\n")
        o.append(f"int billing_enabled_{p.func}(void)\n{{\n"
                 f"\treturn BILLING_{p.macro}_ENABLED() != 0;\n}}\n\n")
    return "".join(o)


def function_site_macros_h(provider):
    """BILLING_<PROBE>() as a call to billing_fire_<probe>().  The pid
    provider of any DTrace finds these calls:
    pid$target::billing_fire_<probe>:entry sees the arguments as arg0..."""
    return sdt_layer_h(provider, "BILLING_FUNCTION_SITE_MACROS_H",
                       "/* Function probe sites: included by billing/probes.h; include that instead.\n"
                       " * Each probe calls billing_fire_<probe>(); there is no semaphore to read,\n"
                       " * so every probe counts as enabled (docs/function-sites.md). */\n",
                       1, lambda p, params: f"billing_fire_{p.func}({', '.join(params)})",
                       includes='#include "billing/probe_functions.h"\n\n')


def function_sites_c(provider):
    """billing_fire_<probe>() as empty functions: the sites themselves in a
    function-site build (docs/function-sites.md)."""
    o = [BANNER,
         "/* The function probe sites themselves: a tracer instruments their entry\n"
         " * (pid provider), so their bodies only keep the compiler from dropping\n"
         " * the function, the call or an argument. */\n",
         '#include "billing/probe_functions.h"\n#include "function_site.h"\n\n']
    for p in provider.probes:
        o.append(f"/* {p.name}: {p.summary} */\n")
        o.append(f"BILLING_FUNCTION_SITE_ void billing_fire_{p.func}({function_params(p)})\n{{\n")
        o += [f"\tBILLING_FUNCTION_SITE_ARG_({n});\n" for n, _, _ in p.args]
        o.append("\tBILLING_FUNCTION_SITE_BARRIER_();\n}\n\n")
        o.append(f"int billing_enabled_{p.func}(void)\n{{\n\treturn 1;\n}}\n\n")
    return "".join(o)


def span_pairs(probes):
    """(start, done, kept, extra) for each NAME__start / NAME__done pair.

    kept: done's arguments that start also has (stored by begin);
    extra: done's other arguments but the last, duration_ns (given to end)."""
    by_name = {p.d_name: p for p in probes}
    pairs = []
    for start in probes:
        if not start.d_name.endswith("__start"):
            continue
        done = by_name.get(start.d_name[:-len("__start")] + "__done")
        if done is None:
            continue
        if not done.args or done.args[-1][0] != "duration_ns":
            raise ProviderError(f"probe {done.name}: the last argument of a -done probe must be duration_ns")
        start_names = {n for n, _, _ in start.args}
        kept = [a for a in done.args[:-1] if a[0] in start_names]
        extra = [a for a in done.args[:-1] if a[0] not in start_names]
        pairs.append((start, done, kept, extra))
    return pairs


def c_decl(arg):
    name, t, _ = arg
    ctype = TYPES[t][0]
    return f"{ctype}{'' if ctype.endswith('*') else ' '}{name}"


def timing_gen_h(provider):
    o = [BANNER, "/* Included by billing/timing.h; include that instead. */\n",
         "#ifndef BILLING_TIMING_GEN_H\n#define BILLING_TIMING_GEN_H\n\n"]
    for start, done, kept, extra in span_pairs(provider.probes):
        base = start.func[:-len("_start")]
        o.append(f"/* {start.name} / {done.name}: begin fires {start.name}; end fires {done.name}\n"
                 f" * with the duration since begin and returns it (0: not measured). */\n")
        o.append(f"typedef struct billing_{base} {{\n")
        o += [f"\t{c_decl(a)};\n" for a in kept]
        o.append(f"\tuint64_t start_ns;\n}} billing_{base}_t;\n\n")
        begin_params = ", ".join([f"billing_{base}_t *span"] + [c_decl(a) for a in start.args])
        end_params = ", ".join([f"billing_{base}_t *span"] + [c_decl(a) for a in extra])
        o.append(f"void billing_{base}_begin({begin_params});\n")
        o.append(f"uint64_t billing_{base}_end({end_params});\n\n")
    o.append("#endif\n")
    return "".join(o)


def stats_on(provider, probe):
    """C expression: PROBE is counted by the stats now (always 0 for a
    probe that feeds no metric, or in a build without stats)."""
    fed = any(f.probe is probe for f in provider.metrics.feeds)
    return "BILLING_STATS_ON_()" if fed else "0"


def timing_gen_c(provider):
    o = [BANNER, '#include "billing/probes.h"\n#include "billing/timing.h"\n\n']
    for start, done, kept, extra in span_pairs(provider.probes):
        base = start.func[:-len("_start")]
        begin_params = ", ".join([f"billing_{base}_t *span"] + [c_decl(a) for a in start.args])
        end_params = ", ".join([f"billing_{base}_t *span"] + [c_decl(a) for a in extra])
        start_args = ", ".join(n for n, _, _ in start.args)
        done_args = ", ".join([f"span->{n}" if n in {k[0] for k in kept} else n
                               for n, _, _ in done.args[:-1]] + ["duration_ns"])
        o.append(f"void billing_{base}_begin({begin_params})\n{{\n")
        o += [f"\tspan->{n} = {n};\n" for n, _, _ in kept]
        o.append(f"\t/* Clocked while either probe is traced, so a tracer of {done.name}\n"
                 f"\t * alone still gets a duration; and always while the stats count it. */\n"
                 f"\tspan->start_ns = billing_clock_if(BILLING_{start.macro}_ENABLED() ||\n"
                 f"\t                                  BILLING_{done.macro}_ENABLED() || {stats_on(provider, done)});\n"
                 f"\tBILLING_{start.macro}({start_args});\n}}\n\n")
        o.append(f"uint64_t billing_{base}_end({end_params})\n{{\n"
                 f"\tuint64_t duration_ns;\n\n"
                 f"\tif (!BILLING_{done.macro}_ENABLED() && !{stats_on(provider, done)})\n\t\treturn 0;\n"
                 f"\tduration_ns = billing_elapsed_ns(span->start_ns);\n"
                 f"\tBILLING_{done.macro}({done_args});\n"
                 f"\treturn duration_ns;\n}}\n\n")
    return "".join(o)


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def catalogue_data_c(provider):
    o = [BANNER, '#include "catalogue_data.h"\n\n',
         f"const char billing_catalogue_provider_[] = {c_string(provider.name)};\n\n"]
    for p in provider.probes:
        o.append(f"static const billing_probe_arg_t args_{p.func}[] = {{\n")
        for n, t, d in p.args:
            o.append(f"\t{{ {c_string(n)}, BILLING_ARG_{TYPES[t][1].upper()}, {c_string(d)} }},\n")
        o.append("};\n")
    o.append("\nconst billing_probe_info_t billing_catalogue_probes_[] = {\n")
    for p in provider.probes:
        o.append(f"\t{{ {c_string(p.name)}, {c_string(p.d_name)}, {c_string(p.summary)}, "
                 f"{len(p.args)}, args_{p.func} }},\n")
    o.append("};\n\nconst size_t billing_catalogue_count_ = "
             "sizeof billing_catalogue_probes_ / sizeof billing_catalogue_probes_[0];\n")
    return "".join(o)


def probe_table(provider):
    o = [TABLE_BEGIN, "",
         "| probe (D name) | arguments | fires when / meaning |",
         "|---|---|---|"]
    for p in provider.probes:
        args = ", ".join(f"`{TYPES[t][1]} {n}`" for n, t, _ in p.args)
        desc = f"Fires when {p.summary[0].lower() + p.summary[1:]}"
        for i, (n, t, d) in enumerate(p.args):
            desc += f" arg{i} `{n}`: {d}."
        o.append(f"| `{provider.name}:::{p.name}` | {args} | {desc.replace('|', '/')} |")
    o += ["", TABLE_END]
    return "\n".join(o) + "\n"


# --- samples: every probe fired with known arguments, for the tests ---------

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
    return {p.d_name for s, d, _, _ in span_pairs(provider.probes) for p in (s, d)}


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
        o.append(f"static BILLING_PROBE_INLINE_ void\nbilling_sample_{p.func}(int k)\n{{\n")
        o += arrays(index, p, "macro", range(len(p.args)))
        o.append(f"\tBILLING_{p.macro}({', '.join(args)});\n}}\n\n")
    paired = paired_names(provider)
    for fn, which, what in (("fire_all", provider.probes, "Every probe through its macro"),
                            ("fire_unpaired", [p for p in provider.probes if p.d_name not in paired],
                             "The probes no timing helper fires, through their macros")):
        o.append(f"/* {what}, in billing.d's order. */\n"
                 f"static BILLING_PROBE_INLINE_ void\nbilling_sample_{fn}(int k)\n{{\n")
        o += [f"\tbilling_sample_{p.func}(k);\n" for p in which]
        o.append("}\n\n")
    index_of = samples_by_probe(provider)
    pairs = span_pairs(provider.probes)
    o.append("/* Every timing helper pair, nested: begin with the -start probe's samples,\n"
             " * end (in reverse order) with the -done probe's own arguments. */\n"
             "static BILLING_PROBE_INLINE_ void billing_sample_fire_timing(int k)\n{\n")
    for start, done, kept, extra in pairs:
        o.append(f"\tbilling_{start.func[:-len('_start')]}_t span_{start.func}_;\n")
    for start, done, kept, extra in pairs:
        si = index_of[start.d_name][0]
        o += arrays(si, start, "timing", range(len(start.args)))
    for start, done, kept, extra in pairs:
        di = index_of[done.d_name][0]
        o += arrays(di, done, "timing", [done.args.index(a) for a in extra])
    for start, done, kept, extra in pairs:
        base = start.func[:-len("_start")]
        o.append(f"\tbilling_{base}_begin(&span_{start.func}_"
                 + "".join(f", {array('timing', start, n)}[k]" for n, _, _ in start.args) + ");\n")
    for start, done, kept, extra in reversed(pairs):
        base = start.func[:-len("_start")]
        o.append(f"\t(void)billing_{base}_end(&span_{start.func}_"
                 + "".join(f", {array('timing', done, n)}[k]" for n, _, _ in extra) + ");\n")
    o.append("}\n\n#endif\n")
    return "".join(o)


def probe_samples_json(provider):
    """What a consumer sees for each round of probe_samples.h.

    Integers as JSON numbers; strings one character per byte (decode with
    latin-1), NULL as ""; a measured duration (timing helpers) as null."""
    pairs = {}  # start's and done's name -> their pair
    for pair in span_pairs(provider.probes):
        pairs[pair[0].d_name] = pairs[pair[1].d_name] = pair
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
        if p.d_name in pairs:
            start, done, _, _ = pairs[p.d_name]
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


def check_probe_table(provider, doc):
    """None when DOC holds the current probe table, else what is wrong."""
    if probe_table(provider) not in open(doc, encoding="utf-8").read():
        return (f"{doc}: probe table is out of date with {provider.path}; rewrite it with: "
                f"python3 provider/generate.py {provider.path} update-probe-table {doc}")
    return None


def update_probe_table(provider, doc):
    """Rewrites the probe table between DOC's markers; None, or what is wrong."""
    text = open(doc, encoding="utf-8").read()
    begin, end = text.find(TABLE_BEGIN), text.find(TABLE_END)
    if begin < 0 or end < begin:
        return f"{doc}: no '{TABLE_BEGIN}' ... '{TABLE_END}' markers"
    new = text[:begin] + probe_table(provider) + text[end + len(TABLE_END) + 1:]
    if new != text:
        with open(doc, "w", encoding="utf-8") as f:
            f.write(new)
    return None


# command -> (emitter, its input arguments).  A COMMANDS emitter returns
# the text main() writes to one more argument, OUT; a DOC_COMMANDS one works
# on the document it is given and returns what is wrong (exit 1), or None.
COMMANDS = {
    "probes-sdt-h": (probes_sdt_h, ["DTRACE_H"]),
    "probes-off-h": (probes_off_h, []),
    "probe-macros-h": (probe_macros_h, []),
    "ffi-prototypes-h": (ffi_prototypes_h, []),
    "ffi-usdt-sites-c": (ffi_usdt_sites_c, []),
    "function-site-macros-h": (function_site_macros_h, []),
    "function-sites-c": (function_sites_c, []),
    "timing-gen-h": (timing_gen_h, []),
    "timing-gen-c": (timing_gen_c, []),
    "catalogue-data-c": (catalogue_data_c, []),
    "probe-samples-h": (probe_samples_h, []),
    "probe-samples-json": (probe_samples_json, []),
    "probe-table": (probe_table, []),
}
# The metrics' emitters take the parsed metric set too.
COMMANDS.update({name: ((lambda f: lambda provider: f(provider, provider.metrics))(emit), [])
                 for name, emit in {**metrics.COMMANDS, **stats_emit.COMMANDS}.items()})
DOC_COMMANDS = {
    "check-probe-table": (check_probe_table, ["DOC"]),
    "update-probe-table": (update_probe_table, ["DOC"]),
}


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path, cmd, rest = argv[1], argv[2], argv[3:]
    if cmd in COMMANDS:
        emit, inputs = COMMANDS[cmd]
        outputs = 1
    elif cmd in DOC_COMMANDS:
        emit, inputs = DOC_COMMANDS[cmd]
        outputs = 0
    else:
        print(f"generate.py: unknown command {cmd!r}; one of: {', '.join([*COMMANDS, *DOC_COMMANDS])}", file=sys.stderr)
        return 2
    if len(rest) != len(inputs) + outputs:
        print(f"generate.py: usage: generate.py PROVIDER.d {cmd} {' '.join(inputs + ['OUT'] * outputs)}",
              file=sys.stderr)
        return 2
    try:
        provider = parse(path)
        result = emit(provider, *rest[:len(inputs)])
    except (OSError, ProviderError) as e:
        print(f"generate.py: {e}", file=sys.stderr)
        return 2
    if not outputs:
        if result:
            print(f"generate.py: {result}", file=sys.stderr)
            return 1
        return 0
    if rest[-1] == "-":
        sys.stdout.write(result)
        return 0
    # Written whole or not at all: a build never sees half a header.
    tmp = rest[-1] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(result)
    os.replace(tmp, rest[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

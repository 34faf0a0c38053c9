#!/usr/bin/env python3
"""Generate everything that names a probe or its arguments from provider/billing.d.

billing.d is the single source of truth.  billing_d.py reads its probe
declarations and the doc comment above each; this script writes one file per
command; a command is named after the file it writes (probe-macros-h
writes probe_macros.h), so meson loops over the names:

  probes-sdt-h DTRACE_H OUT    dtrace -h output renamed into BILLING_SDT_*, const strings,
                               arguments never immediates
  probes-off-h OUT             the same macros as no-ops, for builds without probes
  probe-macros-h OUT           the public BILLING_<PROBE>() / _ENABLED() wrappers
  ffi-prototypes-h OUT         billing_fire_<probe>() and billing_enabled_<probe>() for
                               callers that cannot use C macros (FFI: Python, Go, Rust)
  ffi-usdt-sites-c OUT         those functions as USDT sites (libbillingprobes-ffi)
  function-site-macros-h OUT   function probe sites (-Dprobe_site=function): the
                               BILLING_SDT_*() layer as calls of billing_fire_<probe>()
  function-sites-c OUT         those functions as the sites: empty, never inlined or
                               cloned (lib/function_site.h); docs/function-sites.md
  timing-gen-h OUT             a begin/end timing helper per NAME-start/NAME-done pair
  timing-gen-c OUT             their definitions, compiled into libbillingprobes
  catalogue-data-c OUT         the C table behind billing_catalogue()
  probe-samples-h OUT          tests: every probe fired with sample arguments (samples_emit.py)
  probe-samples-json OUT       tests: the values consumers must see for those samples
  probe-table OUT              the Markdown probe reference (docs/write.py puts it in docs/probes.md)
  billing-metrics-layout-h OUT the metrics' keys, values and observe functions (metrics.py)
  billing-exporter-programs-h OUT  billing-exporter's BPF maps and programs
  metric-table-gen-h OUT       billing-exporter's metric table
  stats-gen-h OUT              billing_stats_<probe>(): the stats writer's entry points
  stats-gen-c OUT              their definitions and the segment's self-description

OUT may be "-" for stdout.  Usage: generate.py PROVIDER.d COMMAND [ARGS...]
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402  the metrics the probes feed (the "@@" lines)
import samples_emit  # noqa: E402  the tests' samples: every probe fired with known arguments
import stats_emit  # noqa: E402  the stats writer's generated half
from billing_d import TYPES, ProviderError, c_decl, parse, spans  # noqa: E402  the reader of billing.d

BANNER = "/* Generated from provider/billing.d by provider/generate.py: do not edit. */\n"


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
        feed = next((f for f in provider.metrics.feeds if f.probe is p), None)
        o.append(f"/* {p.name}: {p.summary}\n")
        for n, t, d in p.args:
            o.append(f" *   {n} ({TYPES[t][1]}): {d}\n")
        o.append(" */\n")
        o.append(f"static BILLING_PROBE_INLINE_ void billing_probe_fire_{p.func}_({params})\n{{\n")
        # A stats build counts every fire while the stats are on, and keeps
        # the trail of open requests (request-start opens one: the others
        # cost one load while none is open); the USDT site fires only while
        # its semaphore says it is traced.
        stats = f"\t\tbilling_stats_{p.func}({', '.join(n for n, _ in stats_emit.needed_args(feed))});\n" if feed else ""
        gate = "" if p.d_name == "request__start" else "\t\tif (BILLING_TRAIL_OPEN_())\n\t"
        o.append(f"#if BILLING_STATS_BUILD_\n\tif (BILLING_STATS_ON_()) {{\n{stats}"
                 f"{gate}\t\tbilling_trail_{p.func}({', '.join(names)});\n\t}}\n"
                 f"\tif (!BILLING_SDT_{p.macro}_ENABLED())\n\t\treturn;\n#endif\n")
        o.append(f"\tBILLING_SDT_{p.macro}({fire_args});\n}}\n")
        # Enabled while the stats count it (a probe that feeds metrics, and
        # request-start, which opens a trail), so what only feeds the probe (a
        # clock read for duration_ns) is there whether traced or not; any
        # other probe while a request is open, for its trail, and else not:
        # untraced outside a request, it costs one load.
        counted = "BILLING_STATS_ON_()" if feed or p.d_name == "request__start" else \
            "(BILLING_STATS_ON_() && BILLING_TRAIL_OPEN_())"
        o.append(f"#if BILLING_STATS_BUILD_\n"
                 f"#define BILLING_{p.macro}_ENABLED() (BILLING_SDT_{p.macro}_ENABLED() || {counted})\n"
                 f"#else\n#define BILLING_{p.macro}_ENABLED() BILLING_SDT_{p.macro}_ENABLED()\n#endif\n")
        o.append(f"#define BILLING_{p.macro}({', '.join(names)}) \\\n\tdo {{ \\\n{checks}"
                 f"\t\tif (BILLING_{p.macro}_ENABLED()) \\\n"
                 f"\t\t\tbilling_probe_fire_{p.func}_({call_args}); \\\n\t}} while (0)\n\n")
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


def timing_gen_h(provider):
    o = [BANNER, "/* Included by billing/timing.h; include that instead. */\n",
         "#ifndef BILLING_TIMING_GEN_H\n#define BILLING_TIMING_GEN_H\n\n"]
    for sp in spans(provider.probes):
        start, done = sp.start, sp.done
        o.append(f"/* {start.name} / {done.name}: begin fires {start.name}; end fires {done.name}\n"
                 f" * with the duration since begin and returns it (0: not measured). */\n")
        o.append(f"typedef struct billing_{sp.base} {{\n")
        o += [f"\t{c_decl(a)};\n" for a in sp.kept]
        o.append(f"\tuint64_t start_ns; /* billing_clock_if()'s mark at begin, 0: not clocked */\n}} billing_{sp.base}_t;\n\n")
        o.append(f"void billing_{sp.base}_begin({sp.begin_params()});\n")
        o.append(f"uint64_t billing_{sp.base}_end({sp.end_params()});\n\n")
    o.append("#endif\n")
    return "".join(o)


def timing_gen_c(provider):
    # A stats build has them in stats_gen.c (stats_emit.timing_helpers),
    # where what their probes count and keep is inline.
    o = [BANNER, '#include "billing/probes.h"\n#include "billing/timing.h"\n'
         '#include "span_clock.h" /* the span clock, inline */\n\n'
         "#if !BILLING_STATS_BUILD_ /* else: stats_gen.c */\n\n"
         "#if defined(__GNUC__)\n#  define BILLING_TIMING_COLD __attribute__((noinline, cold))\n"
         "#  define BILLING_TIMING_UNLIKELY(x) __builtin_expect(!!(x), 0)\n#else\n#  define BILLING_TIMING_COLD\n"
         "#  define BILLING_TIMING_UNLIKELY(x) (x)\n#endif\n\n"]
    for sp in spans(provider.probes):
        start, done = sp.start, sp.done
        start_args = ", ".join(n for n, _, _ in start.args)
        done_args = ", ".join([f"span->{n}" if n in {k[0] for k in sp.kept} else n
                               for n, _, _ in done.args[:-1]] + ["duration_ns"])
        o.append(f"/* {start.name} traced (or open to a trail): the clock read, the probe fired. */\n"
                 f"static BILLING_TIMING_COLD void begin_fired_{sp.base}({sp.begin_params()})\n{{\n"
                 f"\tspan->start_ns = bs_span_start_(1);\n"
                 f"\tBILLING_{start.macro}({start_args});\n}}\n\n")
        o.append(f"void billing_{sp.base}_begin({sp.begin_params()})\n{{\n")
        o += [f"\tspan->{n} = {n};\n" for n, _, _ in sp.kept]
        o.append(f"\t/* Clocked while either probe is enabled (traced, or counted by the\n"
                 f"\t * stats), so a tracer of {done.name} alone still gets a duration. */\n"
                 f"\tif (BILLING_TIMING_UNLIKELY(BILLING_{start.macro}_ENABLED())) {{\n"
                 f"\t\tbegin_fired_{sp.base}(span, {start_args});\n\t\treturn;\n\t}}\n"
                 f"\tbs_span_start_at_(&span->start_ns, BILLING_{done.macro}_ENABLED());\n}}\n\n")
        o.append(f"uint64_t billing_{sp.base}_end({sp.end_params()})\n{{\n"
                 f"\tuint64_t duration_ns;\n\n"
                 f"\tif (!BILLING_{done.macro}_ENABLED())\n\t\treturn 0;\n"
                 f"\tduration_ns = bs_span_ns_(span->start_ns);\n"
                 f"\tBILLING_{done.macro}({done_args});\n"
                 f"\treturn duration_ns;\n}}\n\n")
    return "".join(o) + "#endif\n"


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
    o = ["| probe (D name) | arguments | fires when / meaning |",
         "|---|---|---|"]
    for p in provider.probes:
        args = ", ".join(f"`{TYPES[t][1]} {n}`" for n, t, _ in p.args)
        desc = f"Fires when {p.summary[0].lower() + p.summary[1:]}"
        for i, (n, t, d) in enumerate(p.args):
            desc += f" arg{i} `{n}`: {d}."
        o.append(f"| `{provider.name}:::{p.name}` | {args} | {desc.replace('|', '/')} |")
    return "\n".join(o) + "\n"


# command -> (emitter, its input arguments).  An emitter returns the text
# main() writes to one more argument, OUT.
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
    "probe-samples-h": (samples_emit.probe_samples_h, []),
    "probe-samples-json": (samples_emit.probe_samples_json, []),
    "probe-table": (probe_table, []),
}
# The metrics' emitters take the parsed metric set too.
COMMANDS.update({name: ((lambda f: lambda provider: f(provider, provider.metrics))(emit), [])
                 for name, emit in {**metrics.COMMANDS, **stats_emit.COMMANDS}.items()})


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path, cmd, rest = argv[1], argv[2], argv[3:]
    if cmd not in COMMANDS:
        print(f"generate.py: unknown command {cmd!r}; one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    emit, inputs = COMMANDS[cmd]
    if len(rest) != len(inputs) + 1:
        print(f"generate.py: usage: generate.py PROVIDER.d {cmd} {' '.join(inputs + ['OUT'])}", file=sys.stderr)
        return 2
    try:
        provider = parse(path)
        result = emit(provider, *rest[:len(inputs)])
    except (OSError, ProviderError) as e:
        print(f"generate.py: {e}", file=sys.stderr)
        return 2
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

#!/usr/bin/env python3
"""Generate everything that names a probe's arguments from provider/billing.d.

billing.d is the single source of truth.  This script reads its probe
declarations and the doc comment above each, and writes one of:

  sdt-header  IN OUT   dtrace -h output renamed into BILLING_SDT_* with const strings
  off-header  OUT      the same macros as no-ops, for builds without probes
  macros      OUT      the public BILLING_<PROBE>() / _ENABLED() wrappers
  catalogue   OUT      the C table behind billing_probe_catalogue()
  functions-h OUT      declarations of billing_fire_<probe>() for callers that
                       cannot use C macros (FFI from Python, Go, Rust, ...)
  functions-c OUT      their definitions, compiled into libbillingprobes-ffi
  timing-h    OUT      a begin/end timing helper per NAME-start/NAME-done pair
  timing-c    OUT      their definitions, compiled into libbillingprobes
  readme-table         the Markdown probe reference, on stdout
  check-readme README  exit 1 unless README holds the current probe reference

Usage: generate.py PROVIDER.d COMMAND [ARGS...]
"""

import os
import re
import sys

# D base type -> (C type in the public API, catalogue type name)
TYPES = {
    "unsigned long long": ("uint64_t", "uint64"),
    "long long": ("int64_t", "int64"),
    "int": ("int32_t", "int32"),
    "char *": ("const char *", "string"),
}

MAX_ARGS = 6  # bpftrace reads arg0..arg5 of a USDT probe on x86-64
README_BEGIN = "<!-- probe-table: generated from provider/billing.d by provider/generate.py -->"
README_END = "<!-- /probe-table -->"
BANNER = "/* Generated from provider/billing.d by provider/generate.py: do not edit. */\n"


class ProviderError(Exception):
    pass


class Probe:
    def __init__(self, d_name, summary, args):
        self.d_name = d_name                        # request__start
        self.name = d_name.replace("__", "-")        # request-start
        self.macro = d_name.replace("__", "_").upper()  # REQUEST_START
        self.func = d_name.replace("__", "_")        # request_start
        self.summary = summary                      # "a request handler begins ..."
        self.args = args                            # [(name, d_type, doc)]


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
        for l in lines[1:]:
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
    return provider, probes


def sdt_header(provider, probes, src, out):
    """Rename dtrace -h's PROVIDER_PROBE macros into our BILLING_SDT_ namespace."""
    text = open(src, encoding="utf-8").read()
    prefix = provider.upper() + "_"
    for p in probes:
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
        raise ProviderError(f"{src}: dtrace -h output does not include <sys/sdt.h>")
    text = text.replace("#include <sys/sdt.h>", ARG_CONSTRAINT + "#include <sys/sdt.h>", 1)
    with open(out, "w", encoding="utf-8") as f:
        f.write(BANNER + "/* Post-processed output of dtrace -h. */\n" + text)


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


def off_header(provider, probes, out):
    o = [BANNER, "/* Probes compiled out: every probe is a no-op that still uses its arguments. */\n",
         "#ifndef BILLING_PROBES_OFF_H\n#define BILLING_PROBES_OFF_H\n\n"]
    for p in probes:
        params = ", ".join(f"a{i}" for i in range(len(p.args)))
        uses = ", ".join(f"(void)(a{i})" for i in range(len(p.args)))
        o.append(f"#define BILLING_SDT_{p.macro}_ENABLED() (0)\n")
        o.append(f"#define BILLING_SDT_{p.macro}({params}) ({uses})\n")
    o.append("\n#endif\n")
    open(out, "w", encoding="utf-8").write("".join(o))


def macros(provider, probes, out):
    o = [BANNER, "/* Included by billing/probes.h; include that instead. */\n",
         "#ifndef BILLING_PROBE_MACROS_H\n#define BILLING_PROBE_MACROS_H\n\n"]
    for p in probes:
        names = [a[0] for a in p.args]
        params = function_params(p)
        fire_args = ", ".join(f"BILLING_PROBE_STR_({n})" if t == "char *" else n for n, t, _ in p.args)
        checks = "".join(f"\t\tBILLING_PROBE_INTEGER_({n}); \\\n" for n, t, _ in p.args if t != "char *")
        call_args = ", ".join(f"({n})" for n in names)
        o.append(f"/* {p.name}: {p.summary}\n")
        for n, t, d in p.args:
            o.append(f" *   {n} ({TYPES[t][1]}): {d}\n")
        o.append(" */\n")
        o.append(f"static BILLING_PROBE_INLINE_ void\nbilling_probe_fire_{p.func}_({params})\n{{\n"
                 f"\tBILLING_SDT_{p.macro}({fire_args});\n}}\n")
        o.append(f"#define BILLING_{p.macro}_ENABLED() BILLING_SDT_{p.macro}_ENABLED()\n")
        o.append(f"#define BILLING_{p.macro}({', '.join(names)}) \\\n\tdo {{ \\\n{checks}"
                 f"\t\tif (BILLING_{p.macro}_ENABLED()) \\\n"
                 f"\t\t\tbilling_probe_fire_{p.func}_({call_args}); \\\n\t}} while (0)\n\n")
    o.append("#endif\n")
    open(out, "w", encoding="utf-8").write("".join(o))


def function_params(p):
    return ", ".join(c_decl(a) for a in p.args)


def functions_h(provider, probes, out):
    o = [BANNER, "/* Included by billing/probe_functions.h; include that instead. */\n",
         "#ifndef BILLING_PROBE_FUNCTIONS_GEN_H\n#define BILLING_PROBE_FUNCTIONS_GEN_H\n\n"]
    for p in probes:
        o.append(f"/* {p.name}: {p.summary} */\n")
        o.append(f"void billing_fire_{p.func}({function_params(p)});\n")
        o.append(f"int billing_enabled_{p.func}(void);\n\n")
    o.append("#endif\n")
    open(out, "w", encoding="utf-8").write("".join(o))


def functions_c(provider, probes, out):
    o = [BANNER, '#include "billing/probes.h"\n#include "billing/probe_functions.h"\n\n']
    for p in probes:
        names = ", ".join(n for n, _, _ in p.args)
        o.append(f"void\nbilling_fire_{p.func}({function_params(p)})\n{{\n"
                 f"\tBILLING_{p.macro}({names});\n}}\n\n")
        o.append(f"int\nbilling_enabled_{p.func}(void)\n{{\n"
                 f"\treturn BILLING_{p.macro}_ENABLED() != 0;\n}}\n\n")
    open(out, "w", encoding="utf-8").write("".join(o))


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


def timing_h(provider, probes, out):
    o = [BANNER, "/* Included by billing/timing.h; include that instead. */\n",
         "#ifndef BILLING_TIMING_GEN_H\n#define BILLING_TIMING_GEN_H\n\n"]
    for start, done, kept, extra in span_pairs(probes):
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
    open(out, "w", encoding="utf-8").write("".join(o))


def timing_c(provider, probes, out):
    o = [BANNER, '#include "billing/probes.h"\n#include "billing/timing.h"\n\n']
    for start, done, kept, extra in span_pairs(probes):
        base = start.func[:-len("_start")]
        begin_params = ", ".join([f"billing_{base}_t *span"] + [c_decl(a) for a in start.args])
        end_params = ", ".join([f"billing_{base}_t *span"] + [c_decl(a) for a in extra])
        start_args = ", ".join(n for n, _, _ in start.args)
        done_args = ", ".join([f"span->{n}" if n in {k[0] for k in kept} else n
                               for n, _, _ in done.args[:-1]] + ["duration_ns"])
        o.append(f"void\nbilling_{base}_begin({begin_params})\n{{\n")
        o += [f"\tspan->{n} = {n};\n" for n, _, _ in kept]
        o.append(f"\t/* Clocked while either probe is traced, so a tracer of {done.name}\n"
                 f"\t * alone still gets a duration. */\n"
                 f"\tspan->start_ns = billing_clock_if(BILLING_{start.macro}_ENABLED() ||\n"
                 f"\t                                  BILLING_{done.macro}_ENABLED());\n"
                 f"\tBILLING_{start.macro}({start_args});\n}}\n\n")
        o.append(f"uint64_t\nbilling_{base}_end({end_params})\n{{\n"
                 f"\tuint64_t duration_ns;\n\n"
                 f"\tif (!BILLING_{done.macro}_ENABLED())\n\t\treturn 0;\n"
                 f"\tduration_ns = billing_elapsed_ns(span->start_ns);\n"
                 f"\tBILLING_{done.macro}({done_args});\n"
                 f"\treturn duration_ns;\n}}\n\n")
    open(out, "w", encoding="utf-8").write("".join(o))


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def catalogue(provider, probes, out):
    o = [BANNER, '#include "catalogue_data.h"\n\n',
         f"const char billing_catalogue_provider_[] = {c_string(provider)};\n\n"]
    for p in probes:
        o.append(f"static const billing_probe_arg_t args_{p.func}[] = {{\n")
        for n, t, d in p.args:
            o.append(f"\t{{ {c_string(n)}, BILLING_ARG_{TYPES[t][1].upper()}, {c_string(d)} }},\n")
        o.append("};\n")
    o.append("\nconst billing_probe_info_t billing_catalogue_probes_[] = {\n")
    for p in probes:
        o.append(f"\t{{ {c_string(p.name)}, {c_string(p.d_name)}, {c_string(p.summary)}, "
                 f"{len(p.args)}, args_{p.func} }},\n")
    o.append("};\n\nconst size_t billing_catalogue_count_ = "
             "sizeof billing_catalogue_probes_ / sizeof billing_catalogue_probes_[0];\n")
    open(out, "w", encoding="utf-8").write("".join(o))


def readme_table(provider, probes):
    o = [README_BEGIN, "",
         "| probe (D name) | arguments | fires when / meaning |",
         "|---|---|---|"]
    for p in probes:
        args = ", ".join(f"`{TYPES[t][1]} {n}`" for n, t, _ in p.args)
        desc = f"Fires when {p.summary[0].lower() + p.summary[1:]}"
        for i, (n, t, d) in enumerate(p.args):
            desc += f" arg{i} `{n}`: {d}."
        o.append(f"| `{provider}:::{p.name}` | {args} | {desc.replace('|', '/')} |")
    o += ["", README_END]
    return "\n".join(o) + "\n"


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path, cmd, rest = argv[1], argv[2], argv[3:]
    try:
        provider, probes = parse(path)
    except (OSError, ProviderError) as e:
        print(f"generate.py: {e}", file=sys.stderr)
        return 2
    try:
        if cmd == "sdt-header" and len(rest) == 2:
            sdt_header(provider, probes, rest[0], rest[1])
        elif cmd == "off-header" and len(rest) == 1:
            off_header(provider, probes, rest[0])
        elif cmd == "macros" and len(rest) == 1:
            macros(provider, probes, rest[0])
        elif cmd == "functions-h" and len(rest) == 1:
            functions_h(provider, probes, rest[0])
        elif cmd == "functions-c" and len(rest) == 1:
            functions_c(provider, probes, rest[0])
        elif cmd == "timing-h" and len(rest) == 1:
            timing_h(provider, probes, rest[0])
        elif cmd == "timing-c" and len(rest) == 1:
            timing_c(provider, probes, rest[0])
        elif cmd == "catalogue" and len(rest) == 1:
            catalogue(provider, probes, rest[0])
        elif cmd == "readme-table" and not rest:
            sys.stdout.write(readme_table(provider, probes))
        elif cmd == "check-readme" and len(rest) == 1:
            readme = open(rest[0], encoding="utf-8").read()
            want = readme_table(provider, probes)
            if want not in readme:
                print(f"generate.py: {rest[0]}: probe table is out of date with {path}; "
                      f"regenerate it with: {argv[0]} {path} readme-table", file=sys.stderr)
                return 1
        else:
            print(f"generate.py: unknown command or wrong arguments: {' '.join(argv[2:])}", file=sys.stderr)
            return 2
    except ProviderError as e:
        print(f"generate.py: {path}: {e}", file=sys.stderr)
        for out in rest[-1:]:
            if cmd not in ("check-readme", "readme-table") and os.path.exists(out):
                os.unlink(out)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

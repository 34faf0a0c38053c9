#!/usr/bin/env python3
"""Generate the function probe sites (-Dprobe_site=function) from provider/billing.d.

In that build mode a probe is not a USDT site but a call of the out-of-line
function billing_fire_<probe>(), arguments in the probe's order, where the
pid provider of any DTrace (Windows, Linux, macOS...) finds it:
pid$target::billing_fire_payment_auth:entry sees the probe's arguments as
arg0... (docs/function-sites.md).  Two outputs:

  header  OUT   billing/probes_function.h: the BILLING_SDT_<PROBE>() layer
                that billing/probes.h wraps, as calls of billing_fire_<probe>()
                and is-enabled checks that are always 1 (nothing to read)
  source  OUT   the definitions of billing_fire_<probe>() and
                billing_enabled_<probe>(): empty, never inlined, never cloned
                (lib/function_site.h); compiled into libbillingprobes and
                libbillingprobes-ffi of a function-site build

It reads billing.d with provider/generate.py's parser, so both agree on
every probe, its C function name and its argument types.

Usage: generate_function_sites.py PROVIDER.d header|source OUT
"""

import os
import sys

sys.dont_write_bytecode = True  # the build must not write into provider/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402  (the one parser of billing.d)

BANNER = "/* Generated from provider/billing.d by provider/generate_function_sites.py: do not edit. */\n"


def header(probes):
    o = [BANNER,
         "/* Function probe sites: included by billing/probes.h; include that instead.\n"
         " * Each probe calls billing_fire_<probe>(); there is no semaphore to read,\n"
         " * so every probe counts as enabled (docs/function-sites.md). */\n",
         "#ifndef BILLING_PROBES_FUNCTION_H\n#define BILLING_PROBES_FUNCTION_H\n\n",
         '#include "billing/probe_functions.h"\n\n']
    for p in probes:
        params = ", ".join(f"a{i}" for i in range(len(p.args)))
        o.append(f"#define BILLING_SDT_{p.macro}_ENABLED() (1)\n")
        o.append(f"#define BILLING_SDT_{p.macro}({params}) billing_fire_{p.func}({params})\n")
    o.append("\n#endif\n")
    return "".join(o)


def source(probes):
    o = [BANNER,
         "/* The function probe sites themselves: a tracer instruments their entry\n"
         " * (pid provider), so their bodies only keep the compiler from dropping\n"
         " * the function, the call or an argument. */\n",
         '#include "billing/probe_functions.h"\n#include "function_site.h"\n\n']
    for p in probes:
        o.append(f"/* {p.name}: {p.summary} */\n")
        o.append(f"BILLING_FUNCTION_SITE_ void\nbilling_fire_{p.func}({generate.function_params(p)})\n{{\n")
        o += [f"\tBILLING_FUNCTION_SITE_ARG_({n});\n" for n, _, _ in p.args]
        o.append("\tBILLING_FUNCTION_SITE_BARRIER_();\n}\n\n")
        o.append(f"int\nbilling_enabled_{p.func}(void)\n{{\n\treturn 1;\n}}\n\n")
    return "".join(o)


def main(argv):
    if len(argv) != 4 or argv[2] not in ("header", "source"):
        sys.stderr.write(__doc__)
        return 2
    path, what, out = argv[1:]
    try:
        probes = generate.parse(path).probes
    except (OSError, generate.ProviderError) as e:
        print(f"generate_function_sites.py: {e}", file=sys.stderr)
        return 2
    text = header(probes) if what == "header" else source(probes)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

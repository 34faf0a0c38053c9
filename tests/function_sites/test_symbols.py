#!/usr/bin/env python3
"""Every probe of billing.d is one function site that survives the optimiser.

usage: test_symbols.py PROGRAM SITES_LIB FFI_SO|- SAMPLES_JSON --sources C... --includes DIR...

PROGRAM is fire_samples.c built with function sites (it fires every probe
with the samples of SAMPLES_JSON); SITES_LIB the static library they come
from; FFI_SO the libbillingprobes-ffi.so of a -Dprobe_site=function build
('-' otherwise).
The same sources are linked again with -O2 -flto by gcc and clang.  For each
program, with billing.d's probes read independently of the generator:
  - billing_fire_<probe> is a defined function, each at its own address
    (no identical-code folding: the pid provider tells sites by address);
  - its body is a bare return (what an untraced site costs inside it);
  - the program calls it (the optimiser kept the call), and running the
    program evaluates every macro's arguments once per fire.
The library holds every site; the FFI library exports them by name.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import billingtest as bt  # noqa: E402
import functionsitetest  # noqa: E402

# what an empty function is on x86-64 and aarch64 (with CET/BTI landing pads)
BARE_RETURN = {"ret", "retq", "endbr64", "bti", "paciasp", "autiasp", "hint"}


def split_args(argv):
    """(program, sites lib, ffi .so or '-', samples json, sources, includes)"""
    program, lib, ffi, samples = argv[:4]
    rest = argv[4:]
    sources = rest[rest.index("--sources") + 1:rest.index("--includes")]
    includes = rest[rest.index("--includes") + 1:]
    return program, lib, ffi, samples, sources, includes


def check_program(label, binary, names, rounds):
    syms = functionsitetest.site_symbols(binary)
    missing = [n for n in names if n not in syms]
    bt.check(not missing, "%s: every probe has its function site (missing: %s)" % (label, missing or "none"))
    present = [syms[n] for n in names if n in syms]
    bt.check(len(set(present)) == len(present),
             "%s: each site at its own address (%d sites, %d addresses)" % (label, len(present), len(set(present))))
    bodies = functionsitetest.site_bodies(binary)
    odd = {n: bodies.get(n) for n in names if not bodies.get(n) or not set(bodies[n]) <= BARE_RETURN}
    bt.check(not odd, "%s: every site's body is a bare return (not: %s)" % (label, odd or "none"))
    called = functionsitetest.called_sites(binary)
    uncalled = [n for n in names if n not in called]
    bt.check(not uncalled, "%s: the program still calls every site (not called: %s)" % (label, uncalled or "none"))
    r = bt.run([binary])
    want = "evaluations=%d" % (len(names) * rounds)
    bt.check(r.returncode == 0 and want in r.stdout,
             "%s: runs, arguments evaluated at every fire (%s; got %r)" % (label, want, r.stdout.strip()))


def main():
    if len(sys.argv) < 8:
        print(__doc__, file=sys.stderr)
        return 2
    program, lib, ffi, samples, sources, includes = split_args(sys.argv[1:])
    names = [functionsitetest.site_function(name) for _, name, _ in bt.provider_probes()]
    # fire_samples.c fires each probe through its macro once a round
    rounds = bt.load_samples(samples)["rounds"]

    lib_syms = functionsitetest.site_symbols(lib)
    bt.check(all(n in lib_syms for n in names), "the function-site library defines every site")
    if ffi != "-":
        out = bt.run(["nm", "-D", "--defined-only", ffi]).stdout
        exported = set(re.findall(r"\sT (billing_fire_\w+)$", out, re.M))
        bt.check(set(names) <= exported,
                 "libbillingprobes-ffi exports every site by name (missing: %s)" % (sorted(set(names) - exported) or "none"))

    check_program("meson build (-O2)", program, names, rounds)
    with tempfile.TemporaryDirectory(prefix="fsite-lto-") as work:
        built, failed = functionsitetest.lto_programs(sources, includes, ["BILLING_PROBE_SITE_FORCE_FUNCTION"], work)
        for label, err in failed:
            bt.check(False, "%s builds: %s" % (label, err))
        bt.check(built, "at least one compiler linked the program with -flto")
        for label, binary in built:
            check_program(label, binary, names, rounds)
    bt.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Oracle's DTrace reads provider/billing.d: `dtrace -h` writes a header that
compiles as C and C++ and declares what systemtap's does.

Usage: test_oracle_header.py SYSTEMTAP_HEADER

SYSTEMTAP_HEADER is systemtap's `dtrace -h` output of the same billing.d
(the build's billing_dtrace_raw.h).  Checks, with Oracle's D compiler
(billingtest.real_dtrace(): /opt/oracle-dtrace, built by
tests/install-deps.sh):
  - `dtrace -h -s provider/billing.d` succeeds;
  - both headers define a BILLING_<PROBE>() and BILLING_<PROBE>_ENABLED()
    macro for every probe billing.d declares (billingtest.provider_probes(),
    read independently), with its argument count, and nothing else;
  - Oracle's probe function prototypes carry billing.d's argument types;
  - a file calling every macro with arguments of those types compiles
    with gcc and clang as C99 and C++17, -Wall -Wextra -Werror.
Not -pedantic: Oracle's _ENABLED() macros are GNU statement expressions
(clang -pedantic rejects them).  Strings are passed as char *, the type
Oracle's header declares (C++ rejects a string literal there; our
probes_sdt.h makes systemtap's const char *).  Oracle's header is not
linked: its probe functions come from Oracle's `dtrace -G`, which needs
objects compiled for it (not this build's).
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

SAMPLE = {"unsigned long long": "1u", "long long": "-1", "int": "0", "char *": "text"}


def macros(text):
    """{PROBE: argument count} of the BILLING_<PROBE>(...) macros, and the
    set of PROBEs with a BILLING_<PROBE>_ENABLED() macro."""
    fire, enabled = {}, set()
    for name, params in re.findall(r"^#define\s+BILLING_(\w+)\(([^)]*)\)", text, re.M):
        if name.endswith("_ENABLED") and not params.strip():
            enabled.add(name[:-len("_ENABLED")])
        else:
            fire[name] = len([p for p in params.split(",") if p.strip()])
    return fire, enabled


def normal(t):
    return " ".join(t.replace("*", " * ").split())


def main():
    stap_header = sys.argv[1]
    dtrace = bt.require_dtrace()
    declared = {bt.elf_name(n).replace("__", "_").upper(): (bt.elf_name(n), [normal(t) for t in ts])
                for _, n, ts in bt.provider_probes()}
    want = {m: len(ts) for m, (_, ts) in declared.items()}
    tmp = tempfile.mkdtemp(prefix="consumers-oracle-")
    try:
        header = os.path.join(tmp, "billing_oracle.h")
        r = bt.run([dtrace, "-h", "-s", bt.PROVIDER_D, "-o", header], timeout=120)
        bt.check(r.returncode == 0 and os.path.exists(header),
                 "Oracle dtrace -h -s provider/billing.d (exit %d %s)" % (r.returncode, r.stderr.strip()[-300:]))
        if not os.path.exists(header):
            bt.finish()
        oracle = open(header).read()
        for label, text in (("Oracle", oracle), ("systemtap", open(stap_header).read())):
            fire, enabled = macros(text)
            bt.check(fire == want, "%s's header: a macro per probe of billing.d (%d), argument counts equal%s"
                     % (label, len(want), "" if fire == want else ": %s vs %s" % (sorted(fire.items()), sorted(want.items()))))
            bt.check(enabled == set(want), "%s's header: an _ENABLED() macro per probe" % label)
        protos = {n: [normal(t) for t in ts.split(",") if t.strip()]
                  for n, ts in re.findall(r"extern void __dtrace_billing___(\w+)\(([^)]*)\);", oracle)}
        bt.check(protos == {d: ts for d, ts in declared.values()},
                 "Oracle's probe functions take billing.d's argument types")

        use = os.path.join(tmp, "use.c")
        with open(use, "w") as f:
            f.write('#include "billing_oracle.h"\n\nvoid fire_every_probe(char *text);\n\n'
                    'void\nfire_every_probe(char *text)\n{\n')
            for m, (_, ts) in declared.items():
                f.write("\tif (BILLING_%s_ENABLED())\n\t\tBILLING_%s(%s);\n" % (m, m, ", ".join(SAMPLE[t] for t in ts)))
            f.write("}\n")
        use_cpp = os.path.join(tmp, "use.cpp")
        shutil.copy(use, use_cpp)
        compilers = [c for c in ("gcc", "g++", "clang", "clang++") if shutil.which(c)]
        bt.check(compilers, "a compiler is installed")
        for cc in compilers:
            cxx = cc.endswith("++")
            cmd = [cc, "-std=c++17" if cxx else "-std=c99", "-Wall", "-Wextra", "-Werror",
                   "-I", tmp, "-c", use_cpp if cxx else use, "-o", os.path.join(tmp, "use.o")]
            r = bt.run(cmd)
            bt.check(r.returncode == 0, "%s %s: a call of every macro compiles%s"
                     % (cc, cmd[1], "" if r.returncode == 0 else ":\n" + r.stderr[-1500:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bt.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""billing/probes.h compiles cleanly where it should and fails where it must.

Usage: test_header_compile.py SOURCE_INCLUDE BUILD_INCLUDE LINK_LIB|- PROBES_SDT(0|1)
(LINK_LIB: the semaphore library, or else the function-site library)

Clean: header_use.c as C99/C11/C++17 with gcc and clang (those installed),
-Wall -Wextra -Werror -pedantic, probes on and BILLING_PROBES_DISABLE, and
compiled with BILLING_STATS_FORCE (a stats build);
linked, and with probes on the program must carry a note for every probe
of billing.d (none with BILLING_PROBES_DISABLE), every argument in a
register or memory (an immediate, `-8@$1250`, is lost to perf).
Must fail: a double, a pointer or a struct as an integer argument; an
integer as a string argument; sys/sdt.h included before billing/probes.h.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WARN = ["-Wall", "-Wextra", "-Werror", "-pedantic"]

GOOD = {"unsigned long long": "1u", "long long": "-1", "int": "0", "char *": '"s"'}
# (what, argument type it targets, the wrong argument)
BAD = [("a double as an int64", "long long", "19.99"),
       ("a pointer as a uint64", "unsigned long long", "&x"),
       ("a struct as an int32", "int", "s"),
       ("an integer as a string", "char *", "42"),
       ("a float as a uint64", "unsigned long long", "0.5f")]


def bad_cases():
    """{what: statement}: the first probe of billing.d with an argument of
    the targeted type, called with the wrong argument there."""
    cases = {}
    for what, d_type, wrong in BAD:
        for _, name, types in bt.provider_probes():
            if d_type in types:
                args = [GOOD[t] for t in types]
                args[types.index(d_type)] = wrong
                cases[what] = "BILLING_%s(%s);" % (bt.elf_name(name).replace("__", "_").upper(), ", ".join(args))
                break
    return cases


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    src_inc, build_inc, sem_lib, sdt = sys.argv[1:5]
    probes_on = sdt == "1"
    want_probes = {bt.elf_name(n) for _, n, _ in bt.provider_probes()}
    compilers = [(c, cxx) for c, cxx in (("gcc", "g++"), ("clang", "clang++")) if shutil.which(c) and shutil.which(cxx)]
    bt.check(compilers, "a C and C++ compiler pair is installed")
    tmp = tempfile.mkdtemp(prefix="header-compile-")
    use_c = os.path.join(HERE, "header_use.c")
    use_cpp = os.path.join(tmp, "header_use.cpp")
    shutil.copy(use_c, use_cpp)
    inc = ["-I", src_inc, "-I", build_inc]
    libs = [sem_lib] if sem_lib != "-" else []
    for c, cxx in compilers:
        for std, comp, src in (("c99", c, use_c), ("c11", c, use_c), ("c++17", cxx, use_cpp)):
            for disable in (False, True):
                out = os.path.join(tmp, f"use-{c}-{std}-{int(disable)}")
                # Linked with the semaphores alone: the USDT build of the
                # program (a -Dstats build's writer is checked below).
                cmd = [comp, f"-std={std}", "-O2", "-DBILLING_STATS_DISABLE", *WARN, *inc, src, "-o", out, *libs]
                if disable:
                    cmd.insert(1, "-DBILLING_PROBES_DISABLE")
                r = run(cmd)
                label = f"{comp} -std={std}{' -DBILLING_PROBES_DISABLE' if disable else ''}"
                if not bt.check(r.returncode == 0, f"{label}: compiles cleanly{'' if r.returncode == 0 else chr(10) + r.stderr}"):
                    continue
                found = {n: [specs for _, specs in sites] for n, sites in bt.sdt_notes(out).items()}
                want = want_probes if probes_on and not disable else set()
                bt.check(set(found) == want, f"{label}: notes for {len(found)} probes, want {len(want)}")
                immediates = [f"{n} {spec}" for n, sites in found.items() for s in sites for spec in s if "@$" in spec]
                bt.check(not immediates, f"{label}: no argument as an immediate {immediates[:3]}")
            # A stats build of the same program (-Dstats=enabled, or
            # BILLING_STATS_FORCE per file, docs/stats.md): compiled, not
            # linked (the writer lives in the stats library).
            r = run([comp, f"-std={std}", "-O2", "-DBILLING_STATS_FORCE", *WARN, *inc, "-c", src, "-o", os.devnull])
            bt.check(r.returncode == 0, f"{comp} -std={std} -DBILLING_STATS_FORCE: compiles cleanly"
                     f"{'' if r.returncode == 0 else chr(10) + r.stderr}")
    cases = bad_cases()
    bt.check(len(cases) == len(BAD), "billing.d has an argument of every type a bad case targets")
    for what, stmt in cases.items():
        bad = os.path.join(tmp, "bad.c")
        with open(bad, "w") as f:
            f.write('#include "billing/probes.h"\nstruct s_t { int a; };\n'
                    'int main(void) { int x = 0; struct s_t s = { 0 }; (void)x; (void)s;\n'
                    f'  {stmt}\n  return 0; }}\n')
        for c, _ in compilers:
            r = run([c, "-std=c99", "-Wall", "-Werror", *inc, "-c", bad, "-o", os.devnull])
            bt.check(r.returncode != 0, f"{c}: '{what}' ({stmt}) is rejected")
    if probes_on:
        early = os.path.join(tmp, "early.c")
        with open(early, "w") as f:
            f.write('#include <sys/sdt.h>\n#include "billing/probes.h"\nint main(void) { return 0; }\n')
        r = run([compilers[0][0], "-std=c99", *inc, "-c", early, "-o", os.devnull])
        bt.check(r.returncode != 0 and "before <sys/sdt.h>" in r.stderr,
                 "sys/sdt.h before billing/probes.h is rejected with a clear message")
    shutil.rmtree(tmp, ignore_errors=True)
    bt.finish()


if __name__ == "__main__":
    main()

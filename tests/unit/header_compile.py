#!/usr/bin/env python3
"""billing/probes.h compiles cleanly where it should and fails where it must.

Usage: header_compile.py SOURCE_INCLUDE BUILD_INCLUDE LINK_LIB|- PROBES_SDT(0|1)
(LINK_LIB: the semaphore library, or else the function-site library)

Clean: header_use.c as C99/C11/C++17 with gcc and clang (those installed),
-Wall -Wextra -Werror -pedantic, probes on and BILLING_PROBES_DISABLE;
linked, and with probes on the program must carry all 12 probe notes.
Must fail: a double, a pointer or a struct as an integer argument; an
integer as a string argument; sys/sdt.h included before billing/probes.h.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WARN = ["-Wall", "-Wextra", "-Werror", "-pedantic"]

BAD_CASES = {
    "double amount": 'BILLING_INVOICE_CREATE(1, 2, 19.99, "EUR");',
    "pointer as id": 'BILLING_ERROR(&x, "db", 1);',
    "struct as status": 'BILLING_REQUEST_DONE(1, "h", s, 0);',
    "integer as string": 'BILLING_ERROR(1, 42, 1);',
    "float duration": 'BILLING_REQUEST_DONE(1, "h", 0, 0.5f);',
}


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    src_inc, build_inc, sem_lib, sdt = sys.argv[1:5]
    probes_on = sdt == "1"
    compilers = [(c, cxx) for c, cxx in (("gcc", "g++"), ("clang", "clang++")) if shutil.which(c) and shutil.which(cxx)]
    if not compilers:
        print("no compiler found")
        return 1
    failures = []
    tmp = tempfile.mkdtemp(prefix="header-compile-")
    use_c = os.path.join(HERE, "header_use.c")
    use_cpp = os.path.join(tmp, "header_use.cpp")
    shutil.copy(use_c, use_cpp)
    inc = ["-I", src_inc, "-I", build_inc]
    libs = [sem_lib] if sem_lib != "-" else []
    checked = 0
    for c, cxx in compilers:
        for std, comp, src in (("c99", c, use_c), ("c11", c, use_c), ("c++17", cxx, use_cpp)):
            for disable in (False, True):
                out = os.path.join(tmp, f"use-{c}-{std}-{int(disable)}")
                cmd = [comp, f"-std={std}", "-O2", *WARN, *inc, src, "-o", out, *libs]
                if disable:
                    cmd.insert(1, "-DBILLING_PROBES_DISABLE")
                r = run(cmd)
                checked += 1
                label = f"{comp} -std={std}{' -DBILLING_PROBES_DISABLE' if disable else ''}"
                if r.returncode != 0:
                    failures.append(f"{label}: does not compile cleanly:\n{r.stderr}")
                    continue
                notes = run(["readelf", "-n", out]).stdout.count("Provider: billing")
                want = 12 if probes_on and not disable else 0
                if notes != want:
                    failures.append(f"{label}: {notes} billing probe notes, want {want}")
    for what, stmt in BAD_CASES.items():
        bad = os.path.join(tmp, "bad.c")
        with open(bad, "w") as f:
            f.write('#include "billing/probes.h"\nstruct s_t { int a; };\n'
                    'int main(void) { int x = 0; struct s_t s = { 0 }; (void)x; (void)s;\n'
                    f'  {stmt}\n  return 0; }}\n')
        for c, _ in compilers:
            r = run([c, "-std=c99", "-Wall", "-Werror", *inc, "-c", bad, "-o", os.devnull])
            checked += 1
            if r.returncode == 0:
                failures.append(f"{c}: '{what}' ({stmt}) compiled, must be rejected")
    if probes_on:
        early = os.path.join(tmp, "early.c")
        with open(early, "w") as f:
            f.write('#include <sys/sdt.h>\n#include "billing/probes.h"\nint main(void) { return 0; }\n')
        r = run([compilers[0][0], "-std=c99", *inc, "-c", early, "-o", os.devnull])
        checked += 1
        if r.returncode == 0 or "before <sys/sdt.h>" not in r.stderr:
            failures.append("sys/sdt.h before billing/probes.h was not rejected with a clear message")
    shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The note reader on what compilers emit for other architectures: clang
compiles tests/tool/cross_forms.c (12-argument probes, floats, registers,
globals, thread-locals, constants) for x86-64, i386, arm64, 32-bit ARM,
s390x, POWER (32- and 64-bit) and MIPS (32- and 64-bit), at -O0 and -O2,
into object files; `billing-probes list --json` on each must agree with
`readelf -n` on every argument string, decode every argument (none
"unknown"), and read each architecture's operands as what they are: a
bare constant on arm64, s390x and MIPS, "#7" on ARM, "i7" on POWER, "$7"
on x86; "0(3)" (POWER), "56($sp)" (MIPS), "[x8]" (arm64) as memory.

clang is a build dependency (the exporter's BPF side); the x86 and ARM
targets are required, the others checked where this clang has them."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tooltest import check, finish, run, skip  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cross_forms.c")
CLANG = shutil.which("clang") or shutil.which("clang-14")
if not CLANG:
    skip("clang is not installed (tests/install-deps.sh installs it)")
sdt = subprocess.run(["sh", "-c", "echo '#include <sys/sdt.h>' | cpp -H -o /dev/null 2>&1 | head -1"],
                     capture_output=True, text=True).stdout.strip()
sdt_dir = os.path.dirname(os.path.dirname(sdt.lstrip(". "))) if sdt else ""
if not sdt_dir:
    skip("no sys/sdt.h (apt-get install systemtap-sdt-dev)")

# target, required, the constant 7 as it is written, how a bare number reads
TARGETS = [
    ("x86_64-linux-gnu", True, "$7"),
    ("i686-linux-gnu", True, "$7"),
    ("aarch64-linux-gnu", True, "7"),
    ("arm-linux-gnueabihf", True, "#7"),
    ("s390x-linux-gnu", False, "7"),
    ("powerpc64le-linux-gnu", False, "i7"),
    ("powerpc-linux-gnu", False, "i7"),
    ("mips64el-linux-gnuabi64", False, "7"),
    ("mipsel-linux-gnu", False, "7"),
]


def readelf_args(path):
    out = subprocess.run(["readelf", "-n", "--wide", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: \S+\s+Arguments: ?([^\n]*)", out)


work = tempfile.mkdtemp(prefix="bp-cross-")
seen = {}
try:
    for target, required, seven in TARGETS:
        for opt in ("-O0", "-O2"):
            obj = os.path.join(work, "%s%s.o" % (target, opt))
            r = subprocess.run([CLANG, "--target=" + target, opt, "-fPIC", "-I" + sdt_dir,
                                "-I/usr/include", "-c", SOURCE, "-o", obj], capture_output=True, text=True)
            if r.returncode != 0:
                check(not required, "clang --target=%s %s compiles cross_forms.c%s" % (target, opt,
                      "" if required else " (optional target: not checked)"))
                if not required:
                    print("note: %s not checked: %s" % (target, (r.stderr.splitlines() or ["?"])[0]))
                continue
            ref = sorted((n, a.strip()) for n, a in readelf_args(obj))
            rc, out, err = run(["list", obj, "--json"])
            doc = json.loads(out) if rc == 0 else {"probes": []}
            got = sorted((p["name"], p["args"]) for p in doc["probes"])
            args = [a for p in doc["probes"] for a in (p["arguments"] or [])]
            unknown = [a["location"] for a in args if a["kind"] == "unknown"]
            check(rc == 0 and len(ref) == 5 and got == ref and not unknown,
                  "%s %s: 5 probes, %d arguments, as readelf -n, none unknown (rc=%d %s %r)"
                  % (target, opt, len(args), rc, unknown[:3], err[-200:]))
            consts = [p for p in doc["probes"] if p["name"] == "consts"]
            kinds = [(a["location"], a["kind"]) for a in consts[0]["arguments"]] if consts else []
            check(kinds and kinds[0] == (seven, "immediate") and all(k == "immediate" for _, k in kinds),
                  "%s %s: constants read as immediates (%s)" % (target, opt, kinds))
            for a in args:
                seen.setdefault(target, set()).add((re.sub(r"-?\d+", "N", a["location"]), a["kind"]))
    for target, forms in sorted(seen.items()):
        print("%s: %s" % (target, " ".join("%s=%s" % f for f in sorted(forms))))
    mem = {t: {f for f, k in forms if k == "memory"} for t, forms in seen.items()}
    check("[xN]" in mem.get("aarch64-linux-gnu", set()) and "[rN]" in mem.get("arm-linux-gnueabihf", set()),
          "arm64 [xN] and ARM [rN] read as memory")
    if "powerpc64le-linux-gnu" in mem:
        check("N(N)" in mem["powerpc64le-linux-gnu"], "POWER's N(N) reads as memory")
    if "mips64el-linux-gnuabi64" in mem:
        check("N($sp)" in mem["mips64el-linux-gnuabi64"], "MIPS's N($sp) reads as memory")
finally:
    shutil.rmtree(work, ignore_errors=True)
finish()

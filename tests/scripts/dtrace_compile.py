#!/usr/bin/env python3
"""Compiles every D script in d-scripts/ with a real DTrace (dtrace -e:
exit after compiling, before enabling anything).

usage: dtrace_compile.py D_SCRIPTS_DIR

Exit 77 (skip) where there is no real DTrace: on Linux /usr/bin/dtrace is
systemtap's wrapper, which only does -h and -G.  The billing provider need
not exist (-Z allows probe descriptions that match nothing); $target comes
from -c with a short-lived command.
"""
import os
import shutil
import subprocess
import sys


def real_dtrace():
    exe = shutil.which("dtrace")
    if not exe:
        return None, "no dtrace(1) on PATH"
    try:
        out = subprocess.run([exe, "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=20).stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "dtrace -V failed: %s" % e
    if "Sun D" not in out and "D 1." not in out and "D 2." not in out:
        return None, "%s is not DTrace (systemtap's -h/-G wrapper?): %r" % (exe, out.strip()[:80])
    if os.geteuid() != 0:
        return None, "DTrace needs root to compile against the kernel's providers"
    return exe, ""


def main():
    d = sys.argv[1]
    exe, why = real_dtrace()
    if not exe:
        print("SKIP: " + why)
        return 77
    failed = 0
    for name in sorted(f for f in os.listdir(d) if f.endswith(".d")):
        path = os.path.join(d, name)
        cmd = [exe, "-e", "-Z", "-q", "-s", path, "-c", "/bin/sleep 0"]
        if "-Cs" in open(path).readline():
            cmd.insert(1, "-C")
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        status = "ok" if proc.returncode == 0 else "FAIL"
        print("%s %s\n%s" % (status, name, proc.stdout.decode(errors="replace")))
        failed += proc.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

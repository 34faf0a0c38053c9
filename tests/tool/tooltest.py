"""Shared helpers of the billing-probes tool tests.

Paths come from the environment meson sets (tests/tool/meson.build):
BP_TOOL, BP_PROVIDER, BP_PROGRAM, BP_PROGRAM_DISABLED, BP_LIB_ALL,
BP_LIB_HELPERS, BP_PROBES (1 when the build has probes), BP_FAST_SITE
(1 for -Dprobe_site=fast: 5-byte nop sites).
A test that cannot run here calls skip(reason): exit 77, meson's SKIP.
"""
import os
import re
import subprocess
import sys

SKIP = 77

TOOL = os.environ.get("BP_TOOL", "")
PROVIDER = os.environ.get("BP_PROVIDER", "")
PROGRAM = os.environ.get("BP_PROGRAM", "")
PROGRAM_DISABLED = os.environ.get("BP_PROGRAM_DISABLED", "")
LIB_ALL = os.environ.get("BP_LIB_ALL", "")
LIB_HELPERS = os.environ.get("BP_LIB_HELPERS", "")
PROBES = os.environ.get("BP_PROBES", "0") == "1"
FAST_SITE = os.environ.get("BP_FAST_SITE", "0") == "1"

failures = []


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(SKIP)


def need_probes():
    if not PROBES:
        skip("this build has no probes (-Dprobes=disabled or no dtrace/sys/sdt.h)")


def run(args, timeout=20, user=None):
    """Run the tool; returns (exit status, stdout, stderr).  A signal
    death is a negative status (subprocess convention)."""
    cmd = [TOOL] + list(args)
    if user is not None:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        failures.append(what)
    return cond


def finish():
    if failures:
        print("%d check(s) failed:" % len(failures))
        for f in failures:
            print("  " + f)
        sys.exit(1)
    print("all checks passed")
    sys.exit(0)


def catalogue(path=None):
    """(provider, name) -> argument count, read from the .d file with a
    regex independent of the tool's parser."""
    text = open(path or PROVIDER).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = {}
    for prov, body in re.findall(r"provider\s+(\w+)\s*\{(.*?)\}\s*;", text, flags=re.S):
        for name, args in re.findall(r"probe\s+(\w+)\s*\(([^)]*)\)\s*;", body):
            args = args.strip()
            out[(prov, name)] = 0 if args in ("", "void") else args.count(",") + 1
    return out

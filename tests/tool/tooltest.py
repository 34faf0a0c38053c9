"""What the billing-probes tool tests share beyond tests/lib/billingtest.py:
the paths meson passes (tests/tool/meson.build) and running the tool.

BP_TOOL, BP_PROGRAM (every probe, fired by the generated or hand-written
test program), BP_PROGRAM_DISABLED (the same without probes), BP_LIB_ALL
(the FFI library: every probe), BP_LIB_HELPERS (libbillingprobes.so: the
timing helpers' probes), BP_PROBES (1 when the build has probes),
BP_FAST_SITE (1 for -Dprobe_site=fast: 5-byte nop sites).  The catalogue
is billing.d, read by billingtest.provider_probes(), never a number here.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from billingtest import check, finish, skip  # noqa: E402,F401

TOOL = os.environ.get("BP_TOOL", "")
PROVIDER = os.environ.get("BP_PROVIDER", bt.PROVIDER_D)
PROGRAM = os.environ.get("BP_PROGRAM", "")
PROGRAM_DISABLED = os.environ.get("BP_PROGRAM_DISABLED", "")
LIB_ALL = os.environ.get("BP_LIB_ALL", "")
LIB_HELPERS = os.environ.get("BP_LIB_HELPERS", "")
PROBES = os.environ.get("BP_PROBES", "0") == "1"
FAST_SITE = os.environ.get("BP_FAST_SITE", "0") == "1"


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


def catalogue(path=None):
    """(provider, ELF name) -> argument count, from billing.d read by
    billingtest's own parser (independent of the tool's)."""
    return {(prov, bt.elf_name(name)): len(args)
            for prov, name, args in bt.provider_probes(path or PROVIDER)}


def readelf_names(path):
    """ELF probe names in a file's notes, as readelf -n prints them."""
    out = subprocess.run(["readelf", "-n", "--wide", path], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"Name: (\S+)", out))


def tps_seconds(text):
    """tps's table lines: [(TXNS, FAILED, FAIL%, partial)] in order."""
    return [(int(t), int(f), int(p), bool(note)) for t, f, p, note in
            re.findall(r"^\d\d:\d\d:\d\d\s+(\d+)\s+(\d+)\s+(\d+)(\s+partial \d+ ms)?$", text, flags=re.M)]

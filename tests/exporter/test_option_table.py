#!/usr/bin/env python3
"""billing-exporter's one option table (tools/options): --help lists
exactly the options --print-option-table prints (docs/exporter.md carries
that table: docs/write.py), and an unknown option, a missing value, a single-valued option
given twice or a value out of range is one line and exit 2.  No privilege
needed."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

exe = h.env_path("BX_EXPORTER")
p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
bt.check(p.returncode == 0 and p.stderr == "" and p.stdout.startswith("usage: billing-exporter "),
         "--help: the usage on stdout, exit 0 (%d, %r)" % (p.returncode, p.stderr))
bt.check_option_table([exe, "--print-option-table"], p.stdout)

me = "billing-exporter: "
for what, args, want in [
        ("unknown option", ["--frobnicate"], "unknown option '--frobnicate'"),
        ("missing value", ["--stats-dir", "/tmp", "--interval"], "--interval needs an integer 1..86400"),
        ("repeated", ["--stats-dir", "/tmp", "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:1"],
         "--listen given twice"),
        ("repeated flag", ["--stats-dir", "/tmp", "--once", "--once"], "--once given twice"),
        ("out of range", ["--stats-dir", "/tmp", "--web-request-timeout", "3601"],
         "--web-request-timeout needs an integer 1..3600, got '3601'"),
        ("malformed", ["--stats-dir", "/tmp", "--interval", "5s"], "--interval needs an integer 1..86400, got '5s'"),
        ("a value to a flag", ["--stats-dir", "/tmp", "--once=1"], "--once takes no value"),
        ("unknown group", ["--stats-dir", "/tmp", "--metrics", "business,nope"], "--metrics: unknown group nope"),
        ("bad format", ["--stats-dir", "/tmp", "--format", "xml"], "--format needs table or json, got 'xml'"),
        ("an operand", ["--stats-dir", "/tmp", "extra"], "unexpected argument 'extra'"),
        ("no target", ["--once"], "no target")]:
    bt.check_refused(what, [exe] + args, want, me)
bt.finish()

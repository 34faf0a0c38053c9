"""billing-probes' one option table (tools/options): for each command the
tool has, COMMAND --help lists exactly the options COMMAND
--print-option-table prints (docs/tool.md carries that table:
docs/write.py); an unknown option, a
missing value, a single-valued option given twice, a malformed value, an
option of another command: one line naming it, exit 2.  No privilege
needed."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tooltest import PROGRAM, TOOL  # noqa: E402
import billingtest as bt  # noqa: E402

usage = subprocess.run([TOOL, "--help"], capture_output=True, text=True, timeout=30).stdout
commands = list(dict.fromkeys(re.findall(r"^(?:usage:|      ) billing-probes (\w+) ", usage, re.M)))
bt.check({"list", "check", "doctor", "trace"} <= set(commands), "--help names the commands (%s)" % commands)
for command in commands:
    p = subprocess.run([TOOL, command, "--help"], capture_output=True, text=True, timeout=30)
    bt.check(p.returncode == 0 and p.stderr == "" and p.stdout.startswith("usage: billing-probes " + command),
             "%s --help: its usage on stdout, exit 0 (%d, %r)" % (command, p.returncode, p.stderr))
    bt.check_option_table([TOOL, command, "--print-option-table"], p.stdout)

me = "billing-probes: "
for what, args, want in [
        ("unknown option", ["list", PROGRAM, "--frobnicate"], "list: unknown option '--frobnicate'"),
        ("another command's option", ["list", PROGRAM, "--once"], "list: unknown option '--once'"),
        ("missing value", ["check", PROGRAM, "--expect-file"], "check: --expect-file needs a file"),
        ("missing -p value", ["doctor", "-p"], "doctor: -p needs a numeric PID"),
        ("repeated", ["list", PROGRAM, "-n", "a*", "-n", "b*"], "list: -n given twice"),
        ("repeated --provider", ["check", PROGRAM, "--provider", "a.d", "--provider", "b.d"],
         "check: --provider given twice"),
        ("repeated flag", ["check", PROGRAM, "--json", "--json"], "check: --json given twice"),
        ("malformed", ["list", "-p", "12x"], "list: -p needs a numeric PID, got '12x'"),
        ("a value to a flag", ["check", PROGRAM, "--json=yes"], "check: --json takes no value"),
        ("a second TARGET", ["list", PROGRAM, PROGRAM], "list: one TARGET only"),
        ("a second SCRIPT", ["trace", "tps", "tps", "-p", "1"], "trace: unexpected argument 'tps'"),
        # --provider is list's, check's and doctor's: another command would ignore it
        ("--provider to trace", ["trace", "tps", "-p", "1", "--provider", "a.d"],
         "trace: unknown option '--provider'")]:
    bt.check_refused(what, [TOOL] + args, want, me)
for command in ("top", "slow"):
    if command in commands:
        bt.check_refused("--provider to " + command, [TOOL, command, "1", "--provider", "a.d"],
                         command + ": unknown option '--provider'", me)
if "top" in commands:
    bt.check_refused("out of range", [TOOL, "top", "1", "--interval", "0.01"],
                     "top: --interval needs a number 0.1..3600, got '0.01'", me)
bt.finish()

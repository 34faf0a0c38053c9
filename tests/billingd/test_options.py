"""billingd's and billing-load's option tables (tools/options): each
README's option table is what --print-option-table prints, and --help lists
exactly its options.  (Their refusals: test_api.py.)  No privilege needed.

usage: test_options.py BILLINGD BILLING_LOAD
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

for exe, readme in zip(sys.argv[1:3], ["examples/billingd/README.md", "examples/billing-load/README.md"]):
    p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    bt.check(p.returncode == 0 and p.stderr == "", "%s --help: exit 0 (%d, %r)" % (exe, p.returncode, p.stderr))
    bt.check_option_table([exe, "--print-option-table"], readme, p.stdout)
bt.finish()

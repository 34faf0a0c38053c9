"""billingd's and billing-load's option tables (tools/options): --help
lists exactly the options --print-option-table prints (the READMEs carry
that table: docs/write.py).  (Their refusals: test_api.py.)  No privilege needed.

usage: test_options.py BILLINGD BILLING_LOAD
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

for exe in sys.argv[1:3]:
    p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    bt.check(p.returncode == 0 and p.stderr == "", "%s --help: exit 0 (%d, %r)" % (exe, p.returncode, p.stderr))
    bt.check_option_table([exe, "--print-option-table"], p.stdout)
bt.finish()

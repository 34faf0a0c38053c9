#!/usr/bin/env python3
"""billingd driven by wrk, a client nobody here wrote: no socket errors, no
error status, and the invoices table holds exactly the 201s wrk saw.

usage: test_wrk.py BILLINGD BILLING_LUA
"""
import re
import shutil
import subprocess
import sys

from billingdtest import Billingd, Checker, skip

billingd_exe, lua = sys.argv[1:3]
wrk = shutil.which("wrk")
if wrk is None:
    skip("wrk is not installed (Debian package wrk)")

check = Checker()
svc = Billingd(billingd_exe, "--threads", "4")
try:
    p = subprocess.run([wrk, "-t2", "-c8", "-d5s", "-s", lua, svc.url + "/", "--", "1000"],
                       capture_output=True, text=True, timeout=60)
finally:
    svc_rc, svc_out = svc.stop()
print(p.stdout, p.stderr)
rows = svc.counts()
svc.cleanup()

m = re.search(r"wrk-result (.*)", p.stdout)
check.eq("wrk exit code", p.returncode, 0)
check.true("wrk printed its counts", m is not None)
got = dict(kv.split("=") for kv in m.group(1).split()) if m else {}
got = {k: int(v) for k, v in got.items()}
check.true("no 'Socket errors' line", "Socket errors" not in p.stdout)
check.true("no 'Non-2xx' line", "Non-2xx" not in p.stdout)
for kind in ("connect", "read", "write", "status", "timeout"):
    check.eq(f"wrk {kind} errors", got.get(kind), 0)
check.eq("every response 200 or 201", got.get("other"), 0)
# wrk calls request() once in its first thread's Lua state to check the
# script (that request is never sent), and again when a connection's first
# write would block: "posted" exceeds what was sent by a few at most.
check.true("wrk posted its whole budget", got.get("posted") == 2000, str(got))
check.true("201s seen for all but at most one invoice per connection",
           0 <= got.get("posted", 0) - got.get("created", 0) <= 8, str(got))
check.eq("invoice rows == 201s wrk counted", rows["invoices"], got.get("created"))
check.eq("billingd exit code", svc_rc, 0)
check.finish()

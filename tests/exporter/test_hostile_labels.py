#!/usr/bin/env python3
"""Hostile label values stay harmless: bytes that are not UTF-8, quotes,
backslashes, newlines and 300-byte strings come out escaped and cut (C1
controls are valid UTF-8 and stay, for terminals see --once), the
exposition passes `promtool check metrics` (text and OpenMetrics), and
10,000 distinct gateway names leave at most 64 values per label plus
"other", with the folded ones counted and every fire still in the totals."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
promtool = bt.require_program("promtool", "prometheus")
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")


def promtool_ok(text):
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    # check metrics also prints naming advice (lint) on stdout/stderr with exit 1 only for errors
    return p.returncode == 0, (p.stdout + p.stderr).strip()


prog = h.FireProgram(fire, "hostile")
ex = None
try:
    ex = h.Exporter(exe, "--pid", str(prog.pid))
    first = prog.fired()
    _, text1 = ex.metrics()
    prog.proc.stdin.write("go\n")
    prog.proc.stdin.flush()
    second = prog.fired()
    _, text2 = ex.metrics()
    om_headers, om_text = ex.metrics(accept="application/openmetrics-text; version=1.0.0")
finally:
    if ex:
        ex.stop()
    prog.release()

s1 = h.parse_exposition(text1)
gateways1 = {dict(l).get("gateway") for (n, l), _ in s1.items() if n == "billing_payments_total"}
for raw, shown in [("bad\xff\xfeutf8", "bad\\xff\\xfeutf8"), ('quote"inside', 'quote"inside'),
                   ("back\\slash", "back\\x5cslash"), ("new\nline", "new\\x0aline"),
                   ("tab\tand\rcr", "tab\\x09and\\x0dcr"), ("\xc3(", "\\xc3("),
                   ("ok-été", "ok-été"), ("c1-\x9bJ", "c1-\x9bJ"), ("300 x", "x" * 31)]:
    bt.check(shown in gateways1, "%r shown as %r" % (raw, shown))
ok, why = promtool_ok(text1)
bt.check(ok, "promtool check metrics passes on the odd names: " + why)

s2 = h.parse_exposition(text2)
ok, why = promtool_ok(text2)
bt.check(ok, "promtool check metrics passes after 10,000 gateway names: " + why)
bt.check(om_text.endswith("# EOF\n") and "openmetrics" in om_headers.get("Content-Type", ""),
         "OpenMetrics when Accept asks for it")
# promtool reads only the Prometheus text format; the OpenMetrics form is
# checked for its own rules: counter families without _total, # EOF last.
om_types = [l.split() for l in om_text.splitlines() if l.startswith("# TYPE ")]
bt.check(om_types and all(not (t[3] == "counter" and t[2].endswith("_total")) for t in om_types),
         "OpenMetrics counter families are named without _total")
bt.check(om_text.count("# EOF") == 1, "OpenMetrics ends with one # EOF")
gateways = {dict(l).get("gateway") for (n, l), _ in s2.items() if n == "billing_payments_total"}
bt.check(len(gateways) <= 65 and "other" in gateways,
         "gateway values capped at 64 + other (%d)" % len(gateways))
series = sum(1 for (n, _), _v in s2.items())
bt.check(series < 3000, "the scrape stays bounded: %d series" % series)
# A burst of new label sets can find the kernel's map allocator empty:
# such fires go to the map's fold map (gateway "other"); one the fold map
# refused too would be counted as dropped, never lost silently.
fired = second["payment_auth"]
counted = h.total(s2, "billing_payments_total")
dropped = h.total(s2, "billing_exporter_dropped_fires_total", map="m_payment_auth")
print("fired %d, counted %d, dropped %d" % (fired, counted, dropped))
bt.check(counted + dropped == fired, "every fire counted or reported dropped: %d + %d == %d"
         % (counted, dropped, fired))
bt.check(counted >= first["payment_auth"], "the odd names all counted")
folded = h.total(s2, "billing_exporter_label_values_folded_total", map="m_payment_auth", label="gateway")
bt.check(folded > 0 and folded <= fired - 64,
         "folded gateway values counted: %d (at most %d)" % (folded, fired - 64))
bt.finish()

#!/usr/bin/env python3
"""A BILLING_STATS_SLOW override changes which requests leave a trail and
an exemplar, not what the SLO rules count as slow: they count billing.d's
default @@slow-threshold bucket (monitoring/rules; tests/style checks the
two agree).  A service started with an override that differs from that
threshold says so in one stderr line, naming the variable, its value and
the rules' bucket (issue 45, requirement 5); one that only restates it, or
a refused value (its own line), says nothing more.  The stats stay on.

On the code before this test, every override was taken without a word."""
import tempfile

import statstest as st
from statstest import bt

st.require_built()
q = st.METRICS.quantities["duration_ns"]
default_s = st.METRICS.limits.slow_default  # seconds as billing.d writes them: "0.25"
ns_of = dict(zip(q.bounds_text, q.bounds_raw))
default_ns = ns_of[default_s]


def as_setting(ns):
    """A bound as BILLING_STATS_SLOW takes it: 500us, 250ms, 1s."""
    if ns % 10**9 == 0:
        return "%ds" % (ns // 10**9)
    if ns % 10**6 == 0:
        return "%dms" % (ns // 10**6)
    return "%dus" % (ns // 1000)


same = as_setting(default_ns)
other = as_setting(next(b for b in q.bounds_raw if b > default_ns))  # the next bound up
lower = as_setting(max(b for b in q.bounds_raw if b < default_ns))
RULES = "the SLO rules still judge by their bucket, billing.d's %s (le=\"%s\")" % (same, default_s)


def lines_of(value):
    """(stderr lines, stats on) of the workload started with the override."""
    p = st.run(["threads", 1, 10], {"BILLING_STATS_SLOW": value, "BILLING_STATS_DIR": tmp})
    return p.stderr.strip().splitlines(), p.returncode == 0 and len(st.segments(p.stdout)) == 1


with tempfile.TemporaryDirectory(prefix="bs-slow-override-") as tmp:
    for value, said in ((other, True), (lower, True), ("%s,payment.authorize=%s" % (same, other), True),
                        ("payment.authorize=%s" % lower, True), (same, False),
                        ("payment.authorize=%s" % same, False), ("%s,refund.create=%s" % (same, same), False),
                        ("off", False)):
        lines, on = lines_of(value)
        if said:
            bt.check(on and len(lines) == 1 and ("BILLING_STATS_SLOW=%s: " % value) in lines[0] and RULES in lines[0],
                     "BILLING_STATS_SLOW=%s: one line saying the SLO rules still judge by billing.d's %s bucket, "
                     "stats on (%s)" % (value, same, lines))
        else:
            bt.check(on and not lines, "BILLING_STATS_SLOW=%s: nothing said, stats on (%s)" % (value, lines))
    refused = as_setting(default_ns + 1000)  # between two bounds
    lines, on = lines_of(refused)
    bt.check(on and len(lines) == 1 and "billing.d's thresholds used" in lines[0] and "SLO rules" not in lines[0],
             "BILLING_STATS_SLOW=%s (no bound): its refusal alone (%s)" % (refused, lines))
bt.finish()

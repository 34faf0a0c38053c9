#!/usr/bin/env python3
"""The exporter's own metrics are declared once: each is one row of
bx_self_metrics[] that names the function making its samples
(tools/billing-exporter/snapshot/self_metrics.h).  A row of
BX_SELF(NAME, ...) is served as billing_exporter_NAME by self_NAME(), so
a row without its function does not build, and a row cannot be served
under another's name.  Compiled here with the build's compiler: a row with
its function builds, one without is refused naming what is missing.  No
privilege needed.

usage: test_self_rows.py -IDIR... -- CC [ARG...]"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

split = sys.argv.index("--")
includes, cc = sys.argv[1:split], sys.argv[split + 1:]

ROW = """#include "self_metrics.h"
%s
const bx_self_metric_t rows[] = {
\tBX_SELF(%s, BX_GAUGE, "", "", "A row of the test's own."),
};
"""
FUNCTION = """static int self_%s(const struct bx_exporter *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
\t(void)ex;
\treturn bx_snapshot_add(s, m, "", 1) ? 0 : -1;
}"""


def build(source):
    p = subprocess.run(cc + ["-std=c99", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c", "-"] + includes,
                       input=source, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


rc, err = build(ROW % (FUNCTION % "test_up", "test_up"))
bt.check(rc == 0, "a row with its function builds (%s)" % (err.strip() or "ok"))
rc, err = build(ROW % ("", "test_up"))
bt.check(rc != 0 and "self_test_up" in err, "a row without its function does not build, naming self_test_up (exit %d)" % rc)
rc, err = build(ROW % (FUNCTION % "test_up", "test_down"))
bt.check(rc != 0 and "self_test_down" in err,
         "a row named otherwise than its function does not build, naming self_test_down (exit %d)" % rc)
bt.finish()

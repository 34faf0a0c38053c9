#!/usr/bin/env python3
"""Every probe's arguments, in order, through a real DTrace's pid provider.

usage: test_pid_provider.py PROGRAM SITES_LIB FFI_SO|- SAMPLES_JSON --sources C... --includes DIR...
(the arguments of test_symbols.py)

PROGRAM is fire_samples.c built with function sites; it is also linked with
-O2 -flto by gcc and clang.  Each runs under Oracle's DTrace
(dtrace -q -s PROG.d -c PROGRAM) with one pid$target::billing_fire_<probe>:entry
clause per probe of billing.d, printing arg0... by the probe's types.  What
it prints must be exactly probe_samples.json: every probe fired through its
macro (integers of every width and sign, NULL as "", bytes that are not
UTF-8), and every timing helper pair with the duration it measured.  So a D
script rewritten to the function-site spelling sees what it saw as USDT.
"""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import billingtest as bt  # noqa: E402
import functionsitetest  # noqa: E402
from test_symbols import split_args  # noqa: E402


def d_program(samples):
    return "".join(functionsitetest.print_clause(p["name"], [a["type"] for a in p["args"]])
                   for p in samples["probes"])


def encode(row):
    return [v if isinstance(v, bytes) else None if v is None else str(v).encode() for v in row]


def matches(got, want):
    """WANT's None (a duration the timing helper measured) matches any value > 0."""
    return len(got) == len(want) and all(
        g == w if w is not None else g.isdigit() and int(g) > 0 for g, w in zip(got, want))


def check_events(label, out, samples):
    fired = {}
    for line in out.split(b"\n"):
        f = line.split(b"|")
        if len(f) > 1:
            fired.setdefault(f[0].decode(errors="replace"), []).append(f[1:])
    for p in samples["probes"]:
        want = [encode(r) for r in p["macro"]] + [encode(r) for r in p["timing"] or []]
        got = list(fired.pop(p["name"], []))
        missing = []
        for w in want:
            hit = next((g for g in got if matches(g, w)), None)
            if hit is None:
                missing.append(w)
            else:
                got.remove(hit)
        bt.check(not missing and not got,
                 "%s: %s fired %d times with exactly the sample arguments%s (missing %s, unexpected %s)"
                 % (label, p["name"], len(want), ", timing durations > 0" if p["timing"] else "",
                    missing[:2], got[:2]))
    bt.check(not fired, "%s: no event of an unknown probe (%s)" % (label, sorted(fired)))


def main():
    if len(sys.argv) < 8:
        print(__doc__, file=sys.stderr)
        return 2
    program, _, _, samples_json, sources, includes = split_args(sys.argv[1:])
    bt.require_tracing(tracer=None)
    dtrace = bt.require_dtrace()
    samples = bt.load_samples(samples_json)
    declared = [name for _, name, _ in bt.provider_probes()]
    bt.check([p["name"] for p in samples["probes"]] == declared,
             "the samples cover every probe billing.d declares")

    with tempfile.TemporaryDirectory(prefix="fsite-pid-") as work:
        script = os.path.join(work, "all_sites.d")
        with open(script, "w") as f:
            f.write(d_program(samples))
        built, failed = functionsitetest.lto_programs(sources, includes, ["BILLING_PROBE_SITE_FORCE_FUNCTION"], work)
        for label, err in failed:
            bt.check(False, "%s builds: %s" % (label, err))
        # Oracle's DTrace names a pid-provider uprobe after the file's
        # device and inode, shared by every dtrace on that file: this
        # test's own copy shares it with none.
        own = bt.private_copy(program, os.path.join(work, "own"))
        for label, binary in [("meson build (-O2)", own)] + built:
            run = functionsitetest.Dtrace(dtrace, script, ["-c", binary])
            rc, _ = run.stop(timeout=120, interrupt=False)
            out = run.output_bytes()
            bt.check(rc == 0, "%s: dtrace -c exits 0 (%s; output ends %r)" % (label, rc, out[-300:]))
            bt.check(not re.search(rb"^dtrace: ", out, re.M),
                     "%s: no message from dtrace (every uprobe enabled, every copyinstr read)" % label)
            check_events(label, out, samples)
    bt.finish()


if __name__ == "__main__":
    sys.exit(main())

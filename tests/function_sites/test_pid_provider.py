#!/usr/bin/env python3
"""Every probe's arguments, in order, through a real DTrace's pid provider.

usage: test_pid_provider.py PROGRAM SITES_LIB FFI_SO|- --sources C... --includes DIR...
(the arguments of test_symbols.py)

PROGRAM is tests/live/probe_fire.c built with function sites; it is also
linked with -O2 -flto by gcc and clang.  Each runs under Oracle's DTrace
(dtrace -q -s PROG.d -c PROGRAM) with one pid$target::billing_fire_<probe>:entry
clause per probe of billing.d, printing arg0... by the probe's types: the
events must be exactly those tests/live expects from the USDT probes
(integers of every width and sign, NULL as "", bytes that are not UTF-8),
and the timing helpers' pairs must fire with measured durations.  So a D
script rewritten to the function-site spelling sees what it saw before.
"""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "live"))
import billingtest as bt  # noqa: E402
import fsite  # noqa: E402
import live_probes  # noqa: E402  (what probe_fire.c fires, event by event)
from test_symbols import split_args  # noqa: E402

HELPER_IDS = [b"500", b"501", b"502"]  # probe_fire.c's fire_helpers(): ids 500 + k


def d_program(probes):
    return "".join(fsite.print_clause(name, types) for _, name, types in probes)


def check_events(label, out, provider_probes, probes):
    lines = [l for l in out.split(b"\n") if b"|" in l]
    helper = [l for l in lines if l.split(b"|")[1:2] and l.split(b"|")[1] in HELPER_IDS]
    macro = sorted(l for l in lines if l not in helper)
    want = live_probes.expected_macro_events(probes)
    missing = [e for e in want if e not in macro]
    extra = [e for e in macro if e not in want]
    bt.check(macro == want, "%s: %d macro events, exactly as fired (want %d; missing %s; unexpected %s)"
             % (label, len(macro), len(want), missing[:3], extra[:3]))
    # the timing helpers' pairs: begin fires -start, end fires -done with a duration
    pairs = {n for _, n, _ in provider_probes if n.endswith("-start") or n.endswith("-done")}
    for name in sorted(pairs):
        got = [l.split(b"|") for l in helper if l.split(b"|")[0] == name.encode()]
        ok = sorted(f[1] for f in got) == HELPER_IDS
        if name.endswith("-done"):
            ok = ok and all(int(f[-1]) > 0 for f in got)
        bt.check(ok, "%s: %s from the timing helpers: ids 500..502%s (got %s)"
                 % (label, name, ", durations > 0" if name.endswith("-done") else "",
                    [b"|".join(f[1:]) for f in got]))


def main():
    if len(sys.argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    program, _, _, sources, includes = split_args(sys.argv[1:])
    bt.require_tracing(tracer=None)
    dtrace = bt.require_dtrace()
    provider_probes = bt.provider_probes()
    _, probes = live_probes.parse_provider(bt.PROVIDER_D)

    with tempfile.TemporaryDirectory(prefix="fsite-pid-") as work:
        script = os.path.join(work, "all_sites.d")
        with open(script, "w") as f:
            f.write(d_program(provider_probes))
        built, failed = fsite.lto_programs(sources, includes, ["BILLING_PROBE_SITE_FORCE_FUNCTION"], work)
        for label, err in failed:
            bt.check(False, "%s builds: %s" % (label, err))
        for label, binary in [("meson build (-O2)", program)] + built:
            run = fsite.Dtrace(dtrace, script, ["-c", binary])
            rc, _ = run.stop(timeout=120, interrupt=False)
            out = run.output_bytes()
            bt.check(rc == 0, "%s: dtrace -c exits 0 (%s; output %r)" % (label, rc, out[-300:]))
            bt.check(not re.search(rb"dtrace: error|invalid address", out),
                     "%s: no DTrace error (copyinstr of every string worked)" % label)
            check_events(label, out, provider_probes, probes)
    bt.finish()


if __name__ == "__main__":
    sys.exit(main())

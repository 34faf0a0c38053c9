#!/usr/bin/env python3
"""Every probe of billing.d is in the built artifacts, with its argument count.

Usage: test_probe_presence.py {readelf|bpftrace} SAMPLES_JSON FILE:PROBES [FILE:PROBES ...]

PROBES is "all" (every probe of billing.d must be there) or "paired" (the
probes the timing helpers fire: those SAMPLES_JSON gives timing values).
readelf: the .note.stapsdt notes name each probe once or more, every site
with as many argument specs as billing.d declares, each a register or
memory operand (an immediate, `-8@$1250`, is lost to perf).  bpftrace:
`bpftrace -l 'usdt:FILE:billing:*'` lists the same probe names (root; skip
77 with the reason otherwise).  The built artifact is what is checked, not
the sources: LTO or a build without probes shows.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402


def main():
    mode, samples = sys.argv[1], bt.load_samples(sys.argv[2])
    nargs = {bt.elf_name(name): len(types) for _, name, types in bt.provider_probes()}
    paired = {p["d_name"] for p in samples["probes"] if p["timing"]}
    bt.check(paired and paired < set(nargs), "the timing helpers fire some of billing.d's probes (%d)" % len(paired))
    if mode == "bpftrace":
        bt.require_tracing()
    for spec in sys.argv[3:]:
        path, which = spec.rsplit(":", 1)
        want = set(nargs) if which == "all" else paired
        if mode == "readelf":
            found = {n: [specs for _, specs in sites] for n, sites in bt.sdt_notes(path).items()}
            for name in sorted(want):
                sites = found.get(name, [])
                bt.check(sites and all(len(s) == nargs[name] for s in sites),
                         "%s: %s at %d site(s), %s argument specs, billing.d declares %d"
                         % (path, name, len(sites), [len(s) for s in sites], nargs[name]))
                immediates = [a for s in sites for a in s if "@$" in a]
                bt.check(not immediates, "%s: %s: no argument as an immediate %s" % (path, name, immediates))
            bt.check(set(found) <= set(nargs), "%s: no probe outside billing.d (%s)" % (path, sorted(set(found) - set(nargs))))
        else:
            r = bt.run(["bpftrace", "-l", "usdt:%s:billing:*" % os.path.abspath(path)])
            listed = {l.rsplit(":", 1)[1] for l in r.stdout.split() if l.startswith("usdt:")}
            bt.check(listed == want, "%s: bpftrace -l lists %d probes, want %d (%s)"
                     % (path, len(listed), len(want), sorted(listed ^ want)))
    bt.finish()


if __name__ == "__main__":
    main()

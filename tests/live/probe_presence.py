#!/usr/bin/env python3
"""Every probe of billing.d is in the built artifacts, with its argument count.

Usage: probe_presence.py {readelf|bpftrace} PROVIDER.d FILE:PROBES [FILE:PROBES ...]

PROBES is "all" (every probe of billing.d must be there) or "helpers" (the
probes the timing helpers fire).  readelf: the .note.stapsdt notes name
each probe once or more, every site with as many argument specs as billing.d
declares.  bpftrace: `bpftrace -l 'usdt:FILE:billing:*'` lists the same
probe names (root; skip 77 with the reason otherwise).  The built artifact
is what is checked, not the sources: LTO or a build without probes shows.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tracer  # noqa: E402

HELPERS = {"request__start", "request__done", "transaction__start", "transaction__done",
           "db__query__start", "db__query__done", "gateway__call__start", "gateway__call__done"}


def readelf_probes(path):
    """{probe name: [argument count of each site]} for provider billing."""
    out = subprocess.run(["readelf", "-nW", path], capture_output=True, text=True, check=True).stdout
    probes = {}
    for block in out.split("stapsdt")[1:]:
        prov = re.search(r"Provider: (\S+)", block)
        name = re.search(r"Name: (\S+)", block)
        args = re.search(r"Arguments:(.*)", block)
        if prov and name and prov.group(1) == "billing":
            nargs = len(args.group(1).split()) if args else 0
            probes.setdefault(name.group(1), []).append(nargs)
    return probes


def main():
    mode, provider_d = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.dirname(os.path.abspath(provider_d)))
    import generate
    _, catalogue = generate.parse(provider_d)
    nargs = {p.d_name: len(p.args) for p in catalogue}
    if mode == "bpftrace":
        tracer.require_bpftrace()
    failures, checks = [], 0
    for spec in sys.argv[3:]:
        path, which = spec.rsplit(":", 1)
        want = set(nargs) if which == "all" else HELPERS
        if mode == "readelf":
            found = readelf_probes(path)
            for name in sorted(want):
                checks += 1
                if name not in found:
                    failures.append(f"{path}: probe {name} missing")
                elif any(n != nargs[name] for n in found[name]):
                    failures.append(f"{path}: probe {name} sites have {found[name]} arguments, "
                                    f"billing.d declares {nargs[name]}")
            extra = set(found) - set(nargs)
            checks += 1
            if extra:
                failures.append(f"{path}: probes not in billing.d: {sorted(extra)}")
        else:
            r = subprocess.run(["bpftrace", "-l", f"usdt:{os.path.abspath(path)}:billing:*"],
                               capture_output=True, text=True)
            listed = {l.rsplit(":", 1)[1] for l in r.stdout.split() if l.startswith("usdt:")}
            checks += 1
            if listed != want:
                failures.append(f"{path}: bpftrace -l lists {sorted(listed)}, want {sorted(want)}")
    for f in failures:
        print("FAIL:", f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

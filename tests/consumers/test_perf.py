#!/usr/bin/env python3
"""perf reads every probe and every argument of billing.d.

Usage: test_perf.py PROGRAM SAMPLES_JSON

PROGRAM (fire_samples.c) fires every probe through its macro, one round of
the sample arguments after another.  `perf probe -x PROGRAM` adds each
probe (perf raises its semaphore), `perf record` runs PROGRAM, `perf
script` prints the events.  Checks: every probe fired once per round, in
order; every integer argument is the sample value; every string argument is
an address, and the bytes at that address in PROGRAM are the sample string
(perf prints a stapsdt string as the pointer, not the text).

perf probe events are global: perf names each one (sdt_billing:NAME, or
NAME_1, ... when another tracer holds NAME: -f); this test deletes exactly
the events it added, also on failure.  perf keeps its build-id cache in
the run's own directory (--buildid-dir), never another run's.
"""
import os
import re
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402


def elf_loads(path):
    """[(vaddr, offset, filesz)] of PROGRAM's PT_LOAD segments (ELF64 LE)."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads = []
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
    return data, loads


def string_at(data, loads, vaddr):
    for start, offset, size in loads:
        if start <= vaddr < start + size:
            at = offset + vaddr - start
            return data[at:data.index(b"\0", at)]
    return None


def main():
    program, samples_path = os.path.abspath(sys.argv[1]), sys.argv[2]
    bt.require_tracing("perf")
    samples = bt.load_samples(samples_path)
    probes = samples["probes"]
    bt.check([p["d_name"] for p in probes] == [bt.elf_name(n) for _, n, _ in bt.provider_probes()],
             "the samples cover billing.d's probes (%d), in order" % len(probes))
    added = []
    tmp = tempfile.mkdtemp(prefix="consumers-perf-")
    # perf probe reads %sdt_ events from PROGRAM's entry in perf's build-id
    # cache when it has one: an entry without its probes, or with an empty
    # probes file (another run's or test's perf record, or buildid-cache
    # --add of a build id cached under another path, leave one), fails
    # every add ("Failed to add events").  A cache of this run's own.
    perf = ["perf", "--buildid-dir", os.path.join(tmp, "buildid")]
    try:
        event_of = {}
        for p in probes:
            r = bt.run(perf + ["probe", "-f", "-x", program, "--add", "%sdt_billing:" + p["d_name"]])
            names = re.findall(r"^\s+(sdt_billing:\S+)\s+\(on ", r.stdout + r.stderr, re.M)
            added += names
            if bt.check(len(names) == 1, "perf probe adds %s (%s)" % (p["name"], names or r.stderr.strip()[-200:])):
                event_of[p["d_name"]] = names[0]
        if len(event_of) != len(probes):
            bt.finish()
        data_file = os.path.join(tmp, "perf.data")
        cmd = perf + ["record", "-q", "-o", data_file]
        for p in probes:
            cmd += ["-e", event_of[p["d_name"]]]
        r = bt.run(cmd + ["--", program], timeout=120)
        bt.check(r.returncode == 0, "perf record runs the program (exit %d %s)" % (r.returncode, r.stderr.strip()[-300:]))
        script = bt.run(perf + ["script", "-i", data_file], timeout=120)
        bt.check(script.returncode == 0, "perf script reads the record")
    finally:
        # What this run added, and anything else on PROGRAM (this build
        # tree's own file: no other tracer's event) a parse may have missed.
        listed = bt.run(perf + ["probe", "-l"]).stdout
        stray = re.findall(r"^\s*(\S+:\S+)\s+\(on .* in %s[ )]" % re.escape(program), listed, re.M)
        for name in sorted(set(added) | set(stray)):
            bt.run(perf + ["probe", "-q", "-d", name])
        bt.run(["rm", "-rf", tmp])

    # COMM PID [CPU] TIME: sdt_billing:EVENT: (IP) arg1=V arg2=V ...
    probe_of = {ev.split(":")[1]: d for d, ev in event_of.items()}
    events = []
    for m in re.finditer(r"sdt_billing:(\S+): \(([0-9a-f]+)\)(.*)", script.stdout):
        if m.group(1) in probe_of:
            events.append((probe_of[m.group(1)], int(m.group(2), 16), dict(re.findall(r"(arg\d+)=(\S+)", m.group(3)))))
    want_order = [p["d_name"] for _ in range(samples["rounds"]) for p in probes]
    bt.check([e[0] for e in events] == want_order,
             "perf script: %d events, every probe once per round in the order fired (want %d)"
             % (len(events), len(want_order)))

    data, loads = elf_loads(program)
    site = {name: sites[0][0] for name, sites in bt.sdt_notes(program).items()}
    by_name = {p["d_name"]: p for p in probes}
    seen = {}
    for d_name, ip, args in events:
        p = by_name[d_name]
        k = seen.get(d_name, 0)
        seen[d_name] = k + 1
        if k >= samples["rounds"]:
            continue
        load_bias = ip - site[d_name]  # where PROGRAM (PIE) was mapped
        wrong = []
        for i, (a, value) in enumerate(zip(p["args"], p["macro"][k])):
            got = args.get("arg%d" % (i + 1))
            if got is None:
                wrong.append("%s missing" % a["name"])
            elif a["type"] == "string":
                text = string_at(data, loads, int(got, 0) - load_bias)
                if text != value:
                    wrong.append("%s: address %s holds %r, want %r" % (a["name"], got, text, value))
            elif int(got, 0) != value:
                wrong.append("%s=%s, want %d" % (a["name"], got, value))
        bt.check(len(args) == len(p["args"]) and not wrong, "%s round %d: %d of %d arguments, %s" % (
            p["name"], k, len(args), len(p["args"]), "values right" if not wrong else "WRONG: " + "; ".join(wrong)))
    bt.finish()


if __name__ == "__main__":
    main()

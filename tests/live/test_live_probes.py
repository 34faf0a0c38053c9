#!/usr/bin/env python3
"""Every probe fires under a real bpftrace with exactly the arguments given.

Usage: test_live_probes.py PROGRAM SAMPLES_JSON [LIBRARY]

PROGRAM is tests/live/probe_fire: each round it fires every probe through
its macro with the sample arguments of probe_samples.json, then the timing
helpers' pairs.  Its macro probes live in PROGRAM; the timing helpers'
probes live in LIBRARY when it is linked shared (else in PROGRAM too).
With LIBRARY, PROGRAM fires only the probes no timing helper fires (see
probe_fire.c: bpftrace 0.17 and duplicate names across modules), and
bpftrace attaches with -p; else with -c.  Checks:
  - every event is one the samples predict, and every predicted event came:
    integers of every width and sign, NULL strings as "", non-UTF-8 bytes;
    the timing helpers' durations measured (> 0);
  - the macros' arguments were evaluated once per fire while traced, and
    never in a run without bpftrace.
The program traced is a private copy, with its own copy of LIBRARY
(bt.private_copy): a tracer attached to the build's file elsewhere would
raise semaphores in it, and the untraced run would evaluate arguments.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

FORMAT = {"uint64": ("%lu", "arg{i}"), "int64": ("%ld", "(int64)arg{i}"),
          "int32": ("%d", "(int32)arg{i}"), "string": ("%s", "str(arg{i})")}


def clause(p, module):
    """One bpftrace clause printing NAME|arg0|arg1|... for probe P."""
    fmt = "|".join(["%s"] + [FORMAT[a["type"]][0] for a in p["args"]])
    vals = ", ".join(['"%s"' % p["name"]] + [FORMAT[a["type"]][1].format(i=i) for i, a in enumerate(p["args"])])
    return 'usdt:%s:billing:%s { printf("%s\\n", %s); }' % (module, p["d_name"], fmt, vals)


def expected(p, values):
    """The line bpftrace prints for P with VALUES; None (a measured duration) as None."""
    fields = [p["name"].encode()]
    for v in values:
        fields.append(None if v is None else v if isinstance(v, bytes) else str(v).encode())
    return fields


def matches(want, got):
    return len(want) == len(got) and all(
        g.isdigit() and int(g) > 0 if w is None else w == g for w, g in zip(want, got))


def main():
    bt.require_tracing()
    private = tempfile.TemporaryDirectory(prefix="bp-live-probes-")
    program, samples = bt.private_copy(sys.argv[1], private.name), bt.load_samples(sys.argv[2])
    library = None
    if len(sys.argv) > 3:
        library = bt.loaded_library(program, os.path.basename(sys.argv[3]).split(".so")[0] + ".so")
        bt.check(library.startswith(os.path.realpath(private.name) + os.sep),
                 "the private copy loads its own %s (%s)" % (os.path.basename(sys.argv[3]), library))
    probes, rounds = samples["probes"], samples["rounds"]
    paired = [p for p in probes if p["timing"]]
    macro_probes = [p for p in probes if not (library and p["timing"])]

    untraced = subprocess.run([program], capture_output=True, text=True, check=True).stdout
    bt.check("evaluations=0" in untraced, "untraced run evaluates no probe argument (%s)" % untraced.strip())

    script = "\n".join([clause(p, program) for p in macro_probes] +
                       [clause(p, library) for p in paired if library])
    if library:
        out, err = bt.run_bpftrace_pid(script, [program, "--wait"])
    else:
        out, err = bt.run_bpftrace(script, [program])
    lines = [l for l in out.split(b"\n") if l]
    want_evaluations = "evaluations=%d" % (len(macro_probes) * rounds)
    bt.check([l for l in lines if l.startswith(b"evaluations=")] == [want_evaluations.encode()],
             "traced run: %s (each macro's arguments evaluated once per fire)" % want_evaluations)

    want = [expected(p, p["macro"][k]) for p in macro_probes for k in range(rounds)]
    want += [expected(p, p["timing"][k]) for p in paired for k in range(rounds)]
    got = [l.split(b"|") for l in lines if b"|" in l]
    unmatched = []
    for g in got:
        hit = next((i for i, w in enumerate(want) if matches(w, g)), None)
        if hit is None:
            unmatched.append(g)
        else:
            del want[hit]
    print("%d events traced; first: %s" % (len(got), got[:2]))
    bt.check(not unmatched, "every event is a predicted one (unexpected: %s)" % unmatched[:5])
    bt.check(not want, "every predicted event came (missing: %s)" % want[:5])
    bt.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Every probe fires under a real bpftrace with exactly the arguments given.

Usage: live_probes.py PROVIDER.d PROGRAM [LIBRARY]

PROGRAM is tests/live/probe_fire.  Its macro probes live in PROGRAM; the
timing helpers' probes live in LIBRARY when it is linked shared (else in
PROGRAM too).  With LIBRARY, PROGRAM fires only the probes the helpers do
not (see probe_fire.c: bpftrace 0.17 and duplicate names across modules).  Checks, with bpftrace attached through -c (which raises the
semaphores; -p for the shared variant, see tracer.py):
  - each probe fired from the macros 3 times, with exact argument values:
    integers of every width and sign, NULL strings as "", non-UTF-8 bytes;
  - each helper pair fired 3 times, with measured durations > 0;
  - the macros' arguments were evaluated once per fire (36 times), and 0
    times in a run without bpftrace.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tracer  # noqa: E402

ROUNDS = 3
ODD = b"caf\xc3\xa9-\xff-odd"


def texts(k):
    return [b"", b"EUR", ODD][k]


def parse_provider(path):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(path))))
    import generate
    return generate.parse(path)


def value(probe_name, arg_index, arg, k):
    name, d_type, _ = arg
    if d_type == "char *":
        return texts(k)
    if d_type == "unsigned long long" and name.endswith("_ns"):
        return str((k + 1) * 10**12).encode()
    if d_type == "unsigned long long":
        return str((100 if arg_index == 0 else 200) + k).encode()
    if d_type == "long long":
        return str(-1999 + k).encode()
    if d_type == "int":
        return str(-7 if k == 1 else k).encode()
    raise ValueError(d_type)


def expected_macro_events(probes):
    """The exact events the macros of probe_fire.c fire."""
    events = []
    for p in probes:
        for k in range(ROUNDS):
            events.append(b"|".join([p.name.encode()] + [value(p.name, i, a, k) for i, a in enumerate(p.args)]))
    return sorted(events)


def bpftrace_program(probes, modules):
    lines = []
    for p in probes:
        fmt = "|".join(["%s"] + ["%s" if t == "char *" else "%ld" for _, t, _ in p.args])
        vals = ", ".join([f'"{p.name}"'] + [f"str(arg{i})" if t == "char *" else f"arg{i}"
                                            for i, (_, t, _) in enumerate(p.args)])
        for m in modules:
            lines.append(f'usdt:{m}:billing:{p.d_name} {{ printf("{fmt}\\n", {vals}); }}')
    return "\n".join(lines)


def main():
    tracer.require_bpftrace()
    provider_d, program = sys.argv[1], os.path.abspath(sys.argv[2])
    library = os.path.realpath(sys.argv[3]) if len(sys.argv) > 3 else None
    _, probes = parse_provider(provider_d)
    helper_probes = {"request-start", "request-done", "transaction-start", "transaction-done",
                     "db-query-start", "db-query-done", "gateway-call-start", "gateway-call-done"}
    failures = []

    untraced = subprocess.run([program], capture_output=True, text=True, check=True).stdout
    if "evaluations=0" not in untraced:
        failures.append(f"untraced run evaluated probe arguments: {untraced.strip()}")

    if library:
        macro_probes = [p for p in probes if p.name not in helper_probes]
        script = (bpftrace_program(macro_probes, [program]) + "\n" +
                  bpftrace_program([p for p in probes if p.name in helper_probes], [library]))
    else:
        macro_probes = probes
        script = bpftrace_program(probes, [program])
    if library:
        out, err = tracer.run_bpftrace_pid(script, [program])
    else:
        out, err = tracer.run_bpftrace(script, [program])

    lines = [l for l in out.split(b"\n") if l]
    evaluations = [l for l in lines if l.startswith(b"evaluations=")]
    events = [l for l in lines if b"|" in l]
    want_evaluations = f"evaluations={len(macro_probes) * ROUNDS}".encode()
    if evaluations != [want_evaluations]:
        failures.append(f"traced run: {evaluations}, want {want_evaluations}")

    helper_events = [e for e in events if re.match(rb"[a-z-]+\|5\d\d\|", e)]
    macro_events = sorted(e for e in events if e not in helper_events)
    want = expected_macro_events(macro_probes)
    if macro_events != want:
        missing = [e for e in want if e not in macro_events]
        extra = [e for e in macro_events if e not in want]
        failures.append(f"macro probes: {len(macro_events)} events, want {len(want)}; "
                        f"missing {missing[:5]}; unexpected {extra[:5]}")

    by_probe = {}
    for e in helper_events:
        by_probe.setdefault(e.split(b"|")[0].decode(), []).append(e.split(b"|"))
    for name in sorted(helper_probes):
        got = by_probe.get(name, [])
        if len(got) != ROUNDS:
            failures.append(f"{name} from the timing helpers: {len(got)} events, want {ROUNDS}")
            continue
        if sorted(int(f[1]) for f in got) != [500, 501, 502]:
            failures.append(f"{name}: ids {[f[1] for f in got]}, want 500..502")
        if name.endswith("-done") and not all(int(f[-1]) > 0 for f in got):
            failures.append(f"{name}: durations {[f[-1] for f in got]}, want all > 0")

    print(f"{len(events)} events traced; first: {events[:2]}")
    for f in failures:
        print("FAIL:", f)
    print(f"{4 - min(len(failures), 4)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""gdb lists every probe of billing.d and reads every argument.

Usage: test_gdb.py PROGRAM SAMPLES_JSON

gdb in batch mode on PROGRAM (fire_samples.c: every probe through its
macro, one round of sample arguments after another):
  - `info probes stap billing` lists every probe of billing.d;
  - `break -probe-stap billing:NAME` for every probe (gdb raises the
    probe's semaphore, so the guarded macro fires);
  - at each hit, $_probe_argc and every $_probe_argN: integers printed by
    gdb with the type the note gives them (so signedness and width count),
    strings read as char *.  All must equal the samples, round by round.
gdb runs a private copy of PROGRAM (bt.private_copy): a tracer attached
to the build's file elsewhere writes its sites in every process running it.
Needs no root: gdb debugs its own child.
"""
import os
import re
import sys
import subprocess
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402


def gdb_script(probes):
    """One breakpoint per probe; each hit prints a block of tagged lines.
    Nothing in it calls a function of the program: gdb 13 cannot restore
    the registers after such a call on a CPU with AMX ("Couldn't write
    extended state status: Bad address"), and a string literal passed to
    printf is such a call (gdb copies it into the program with malloc)."""
    lines = ["set pagination off", "set confirm off", "set print elements 0",
             "info probes stap billing"]
    for p in probes:
        lines += ["break -probe-stap billing:" + p["d_name"], "commands", "silent",
                  # the name inside the format: a string argument would make
                  # gdb call malloc() in the program (see gdb_script's doc)
                  'printf "@HIT ' + p["d_name"] + ' %d\\n", $_probe_argc']
        for i, a in enumerate(p["args"]):
            if a["type"] == "string":
                lines.append('printf "@ARG %d [%%s]\\n", (const char *) $_probe_arg%d' % (i, i))
            else:
                lines += ['echo @ARG %d [' % i, "output $_probe_arg%d" % i, 'echo ]\\n']
        lines += ["continue", "end"]
    lines.append("run")
    return "\n".join(lines) + "\n"


def main():
    bt.require_program("gdb", "gdb")
    private = tempfile.TemporaryDirectory(prefix="consumers-gdb-")
    program, samples_path = bt.private_copy(sys.argv[1], private.name), sys.argv[2]
    samples = bt.load_samples(samples_path)
    probes = samples["probes"]
    bt.check([p["d_name"] for p in probes] == [bt.elf_name(n) for _, n, _ in bt.provider_probes()],
             "the samples cover billing.d's probes (%d), in order" % len(probes))
    with tempfile.NamedTemporaryFile("w", suffix=".gdb", prefix="consumers-gdb-") as f:
        f.write(gdb_script(probes))
        f.flush()
        r = subprocess.run(["gdb", "-batch", "-nx", "-x", f.name, program],
                           capture_output=True, timeout=120)
    out = r.stdout
    bt.check(r.returncode == 0, "gdb -batch exits 0 (%d; %s)" % (r.returncode, r.stderr.decode(errors="replace")[-300:]))

    listed = set(re.findall(rb"^stap\s+billing\s+(\S+)\s", out, re.M))
    bt.check(listed == {p["d_name"].encode() for p in probes},
             "info probes lists every probe (%d listed, %d in billing.d)" % (len(listed), len(probes)))

    hits = re.split(rb"^@HIT ", out, flags=re.M)[1:]
    order = [h.split(b" ", 1)[0].decode() for h in hits]
    want_order = [p["d_name"] for _ in range(samples["rounds"]) for p in probes]
    bt.check(order == want_order, "every probe hit once per round, in the order fired (%d hits, want %d)"
             % (len(order), len(want_order)))
    by_name = {p["d_name"]: p for p in probes}
    seen = {}
    for hit in hits:
        name, argc = hit.split(b"\n", 1)[0].decode().split()
        p = by_name.get(name)
        k = seen.get(name, 0)
        seen[name] = k + 1
        if p is None or k >= samples["rounds"]:
            continue
        got = {int(i): v for i, v in re.findall(rb"^@ARG (\d+) \[(.*?)\]$", hit, re.M | re.S)}
        wrong = []
        for i, (a, value) in enumerate(zip(p["args"], p["macro"][k])):
            if i not in got:
                wrong.append("%s missing" % a["name"])
            elif a["type"] == "string" and got[i] != value:
                wrong.append("%s=%r, want %r" % (a["name"], got[i], value))
            elif a["type"] != "string" and got[i] != str(value).encode():
                wrong.append("%s=%s, want %d" % (a["name"], got[i].decode(errors="replace"), value))
        bt.check(int(argc) == len(p["args"]) and not wrong, "%s round %d: $_probe_argc %s of %d, %s" % (
            p["name"], k, argc, len(p["args"]), "arguments right" if not wrong else "WRONG: " + "; ".join(wrong)))
    bt.finish()


if __name__ == "__main__":
    main()

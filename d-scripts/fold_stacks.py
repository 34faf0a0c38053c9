#!/usr/bin/env python3
"""Fold cpu_profile's stacks into one line per stack, for flame graphs.

USAGE: bpftrace d-scripts/bpftrace/cpu_profile.bt PID | python3 d-scripts/fold_stacks.py > cpu.folded
       flamegraph.pl cpu.folded > cpu.svg

Reads bpftrace's printed @samples[kstack, ustack, comm]: COUNT map (or a
file named as the argument) and writes "comm;root;...;leaf COUNT" lines,
the "folded" format of Brendan Gregg's stackcollapse scripts: outermost
frame first, frames separated by ';', offsets (+0x1f) dropped.  bpftrace
0.17 cannot print this itself (no per-frame access), so this is the one
step done outside the tracer.  DTrace users fold cpu_profile.d's output with
stackcollapse.pl.
"""
import re
import sys


def fold(text):
    """bpftrace stack map entries -> {"comm;root;...;leaf": count}."""
    folded = {}
    for m in re.finditer(r"^@samples\[(.*?)\]: (\d+)$", text, re.M | re.S):
        frames = [l.strip() for l in m.group(1).split("\n")]
        frames = [re.sub(r"\+\d+$", "", f) for f in frames if f and f != ","]
        if not frames:
            continue
        comm = frames[-1].lstrip(", ")
        key = ";".join([comm] + list(reversed(frames[:-1])))
        folded[key] = folded.get(key, 0) + int(m.group(2))
    return folded


def main(argv):
    if len(argv) > 2:
        print("usage: fold_stacks.py [FILE]", file=sys.stderr)
        return 2
    try:
        text = open(argv[1]).read() if len(argv) == 2 else sys.stdin.read()
    except OSError as e:
        print(f"fold_stacks.py: {argv[1]}: {e.strerror}", file=sys.stderr)
        return 2
    folded = fold(text)
    if not folded:
        print("fold_stacks.py: no @samples stacks in the input", file=sys.stderr)
        return 1
    for stack, count in sorted(folded.items(), key=lambda kv: -kv[1]):
        print(f"{stack} {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Each D script in d-scripts/ has its bpftrace twin, an example file and a
header with USAGE and FIELDS, and the pair documents the same fields.

usage: test_pairs.py D_SCRIPTS_DIR [NAME...]

The scripts are found in the folder; NAME... is d-scripts/meson.build's one
list (what is installed), which must name exactly those, and d-scripts/
README.md's table must have a row for each.  test_scripts.py
runs both twins against one workload; this test reads them side by side and
makes the mechanical part of keeping them in step fail loudly: a missing
twin, a field named in one header and not the other, an example that is
not from a real run, a D script whose USAGE needs a program besides dtrace
to print its table.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402


def header(text):
    m = re.match(r"(?:#![^\n]*\n)?/\*(.*?)\*/", text, re.S)
    return m.group(1) if m else ""


def fields(head):
    """Upper-case column names (COUNT, P50_US, SLOW%) and @maps named in the
    header's FIELDS section (up to the next section)."""
    m = re.search(r"FIELDS(.*?)(?=\n \* (?:JSON|OVERHEAD|How exact|EXACTNESS|BOUNDED|CAPACITY|"
                  r"Speculation|At exit|STABILITY)|\Z)", head, re.S)
    head = m.group(1) if m else ""
    names = set(re.findall(r"\b[A-Z][A-Z0-9_]{2,}%?", head))
    names |= set(re.findall(r"@[a-z_]+", head))
    # words of prose that are not fields
    return names - {"USAGE", "FIELDS", "JSON", "OVERHEAD", "STABILITY", "EXAMPLE", "CMD", "ARGS",
                    "PID", "NOTE", "UTC", "SRUN", "ENOENT", "EACCES", "ISO", "BPF",
                    "BPFTRACE_MAP_KEYS_MAX", "HH", "MM", "SS", "OUTPUT", "BOUNDED", "MEMORY",
                    "DETAIL", "PROBE", "OFFSET", "TIME", "NR", "NAME", "PATH", "ERRNO",
                    "COMM", "TID", "TOTAL", "JPY", "EUR", "USD", "CPU"}


def main():
    d = sys.argv[1]
    problems = []
    ds = sorted(f[:-2] for f in os.listdir(d) if f.endswith(".d"))
    bts = sorted(f[:-3] for f in os.listdir(os.path.join(d, "bpftrace")) if f.endswith(".bt"))
    if not ds:
        problems.append("no D scripts in %s" % d)
    listed = sorted(sys.argv[2:])
    if listed and listed != ds:
        problems.append("d-scripts/meson.build's script_names %s differ from the .d files %s" % (listed, ds))
    readme = open(os.path.join(d, "README.md")).read()
    table = "\n".join(l for l in readme.split("\n") if l.startswith("| ["))
    # the row's link text names it: "| [tps](#...)" or "| [syscalls, file_opens, ...](#...)"
    unlisted = [n for n in ds if not re.search(r"^\| \[[^\]]*\b%s\b[^\]]*\]" % re.escape(n), table, re.M)]
    if unlisted:
        problems.append("d-scripts/README.md's table has no row for %s" % unlisted)
    if ds != bts:
        problems.append("D scripts without a twin %s, twins without a D script %s" %
                        (sorted(set(ds) - set(bts)), sorted(set(bts) - set(ds))))
    for name in ds:
        dpath = os.path.join(d, name + ".d")
        btpath = os.path.join(d, "bpftrace", name + ".bt")
        expath = os.path.join(d, name + ".example.txt")
        if not (os.path.exists(dpath) and os.path.exists(btpath)):
            continue
        dtext, bttext = open(dpath).read(), open(btpath).read()
        dh, bth = header(dtext), header(bttext)
        for label, head in (("D", dh), ("bpftrace", bth)):
            for word in ("USAGE:", "FIELDS", "OVERHEAD", "STABILITY", "EXAMPLE"):
                if word not in head:
                    problems.append("%s %s: header lacks %s" % (label, name, word))
        if "#pragma D option quiet" not in dtext:
            problems.append("%s.d: no '#pragma D option quiet'" % name)
        if "$1" in dtext and "#pragma D option defaultargs" not in dtext:
            problems.append("%s.d: takes $1 without 'defaultargs'" % name)
        if "-p PID" not in dh or "-c " not in dh:
            problems.append("%s.d: USAGE must show -p PID and -c" % name)
        # run alone: dtrace itself prints what a person reads, no reader program
        want = "dtrace -%ss %s.d " % ("C" if re.match(r"#![^\n]*-C", dtext) else "", name)
        usage = re.search(r"USAGE: ([^\n]*)", dh)
        if not usage or not usage.group(1).startswith(want):
            problems.append("%s.d: USAGE must run it with dtrace alone, as its #! line says (%s...), not %r"
                            % (name, want, usage.group(1) if usage else None))
        if not bttext.startswith("#!/usr/bin/env bpftrace"):
            problems.append("%s.bt: no bpftrace #! line" % name)
        if "Hit Ctrl-C to end" not in dtext or "Hit Ctrl-C to end" not in bttext:
            problems.append("%s: a twin does not say 'Hit Ctrl-C to end'" % name)
        only_d, only_bt = fields(dh) - fields(bth), fields(bth) - fields(dh)
        if only_d or only_bt:
            problems.append("%s: fields only in .d %s, only in .bt %s" %
                            (name, sorted(only_d), sorted(only_bt)))
        if ("JSON" in dh) != ("JSON" in bth):
            problems.append("%s: JSON output in one twin only" % name)
        if not os.path.exists(expath):
            problems.append("%s: no %s" % (name, os.path.basename(expath)))
            continue
        ex = open(expath).read()
        if not re.search(r"^# ", ex, re.M) or "bpftrace" not in ex:
            problems.append("%s: example lacks the command line" % name)
        if len(ex.split("\n")) < 15:
            problems.append("%s: example too short to be a real run" % name)
    for p in problems:
        bt.check(False, p)
    bt.check(not problems, "%d script pairs: twins, headers, fields and examples in step" % len(ds))
    bt.finish()


if __name__ == "__main__":
    main()

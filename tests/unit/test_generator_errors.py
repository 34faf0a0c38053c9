#!/usr/bin/env python3
"""provider/generate.py refuses a broken billing.d with one clear line,
and keeps the docs table in step.

Usage: test_generator_errors.py GENERATE.py PROVIDER.d

Each case edits a copy of the real billing.d; the generator must exit 2
with a single stderr line naming the file and the problem, and write no
output file.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

CASES = {
    "undocumented argument": (lambda s: s.replace(" * @handler handler name, e.g. \"payment.authorize\"\n", "", 1),
                              "2 arguments but 1 @arg lines"),
    "probe without doc comment": (lambda s: s.replace("\n};\n", "\n\tprobe nodoc(unsigned long long);\n};\n", 1),
                                  "without a doc comment: nodoc"),
    "system typedef": (lambda s: s.replace("probe error(unsigned long long,", "probe error(uint64_t,", 1),
                       "type 'uint64_t' is not one of"),
    "too many arguments": (lambda s: re.sub(r"probe error\(([^)]*)\)", r"probe error(\1, int, int, int, int)", s).replace(
        " * @code the service's error code (never 0)\n",
        " * @code the service's error code (never 0)\n * @a a\n * @b b\n * @c c\n * @d d\n", 1),
        "7 arguments, at most 6"),
    "doc names another probe": (lambda s: s.replace(" * error: the service hit", " * fault: the service hit", 1),
                                "doc comment must start with 'error: ...'"),
    "no provider block": (lambda s: s.replace("provider billing {", "provder billing {", 1),
                          "no 'provider NAME { ... };' block"),
    "-done without duration_ns": (lambda s: s.replace("probe db__query__done(unsigned long long, char *, int, unsigned long long)",
                                                      "probe db__query__done(unsigned long long, char *, int, int)", 1)
                                  .replace(" * @duration_ns time since db-query-start, in nanoseconds (0: not measured)",
                                           " * @rows rows", 1),
                                  "the last argument of a -done probe must be duration_ns"),
    "metric label from an ID": (lambda s: s.replace("@@counter billing_errors_total count {component, code}",
                                                    "@@counter billing_errors_total count {component, request_id}", 1),
                                "request_id is unsigned long long: IDs and amounts never make labels"),
    "metric of an undeclared quantity": (lambda s: s.replace("@@quantity amount_minor", "@@quantity amount_major", 1)
                                         .replace("@@buckets amount_minor", "@@buckets amount_major", 1)
                                         .replace("@@native amount_minor", "@@native amount_major", 1),
                                         "amount_minor is not a declared @@quantity"),
    "counter without _total": (lambda s: s.replace("billing_errors_total count", "billing_errors count", 1),
                               "billing_errors: a counter's name ends in _total"),
    "family help given twice": (lambda s: s.replace(
        '@@histogram billing_transaction_amount_minor observe(amount_minor) {kind="refund", currency}',
        '@@histogram billing_transaction_amount_minor observe(amount_minor) {kind="refund", currency}\n'
        '\t *     Another help.', 1),
        "billing_transaction_amount_minor: help given twice; give it once"),
    "family with other labels": (lambda s: s.replace('{kind="refund", currency}', '{kind="refund", reason}', 1),
                                 "billing_transaction_amount_minor: declared twice with another type, unit or labels"),
    "known values file missing": (lambda s: s.replace("@@known currency file=iso4217.txt",
                                                      "@@known currency file=nosuch.txt", 1),
                                  "@@known currency: cannot read"),
    "known values of an int argument": (lambda s: s.replace("@@known currency file=iso4217.txt",
                                                            "@@known code file=iso4217.txt", 1),
                                        "@@known code: probe error passes it as an int"),
    "metric bucket not whole": (lambda s: s.replace("@@buckets amount_minor 100 ", "@@buckets amount_minor 100.5 ", 1),
                                "bound 100.5 is not a whole amount_minor"),
    "native schema out of range": (lambda s: s.replace("@@native duration_ns schema=6 ", "@@native duration_ns schema=9 ", 1),
                                   "want @@native ARG schema=0..8 octaves=LOW..HIGH"),
    "native range upside down": (lambda s: s.replace("octaves=-20..7", "octaves=7..-20", 1),
                                 "want @@native ARG schema=0..8 octaves=LOW..HIGH"),
    "native histogram twice": (lambda s: s.replace("@@native amount_minor", "@@native duration_ns", 1),
                               "@@native names no declared @@quantity, or one twice"),
    "probe of an undeclared group": (lambda s: s.replace("@@group db", "@@group database", 1),
                                     "@@group database is not one of @@groups (business requests db gateway)"),
    "no groups line": (lambda s: s.replace(" * @@groups business* requests* db gateway\n", "", 1),
                       "no '@@groups NAME[*] ...' line"),
    "group named all": (lambda s: s.replace("@@groups business* requests* db gateway",
                                            "@@groups business* requests* db gateway all", 1),
                        "none named all or exporter"),
    "slow thresholds past the segment's room": (
        lambda s: s.replace("@@slow-threshold default=0.25",
                            "@@slow-threshold default=0.25 " + " ".join("h%d=0.5" % i for i in range(17)), 1),
        "(at most 16 handlers)"),
    # A label value's room in a segment's dictionary is 32 bytes: 64 was
    # taken, and the writer copied 64 bytes into it.
    "label bytes past a dictionary entry": (lambda s: s.replace("@@label-bytes default=32", "@@label-bytes default=64", 1),
                                            "label bytes must be 8, 16, .. 32"),
    # A row names a dictionary value by a byte below BS_IDX_KNOWN (64), where
    # the known values begin: 65 would read as the first known value.
    "label values past the known values' base": (lambda s: s.replace("@@label-values 64", "@@label-values 65", 1),
                                                 "want one whole number 1..64"),
}


def main():
    generate, provider = sys.argv[1], sys.argv[2]
    original = open(provider).read()
    with tempfile.TemporaryDirectory() as tmp:
        # The files billing.d's "@@known" lines read, beside the copy.
        shutil.copy(os.path.join(os.path.dirname(provider), "iso4217.txt"), tmp)
        for name, (edit, message) in CASES.items():
            broken = os.path.join(tmp, "billing.d")
            edited = edit(original)
            if not bt.check(edited != original, f"{name}: the edit applies to billing.d"):
                continue
            open(broken, "w").write(edited)
            out = os.path.join(tmp, "out.h")
            r = subprocess.run([sys.executable, generate, broken, "probe-macros-h", out],
                               capture_output=True, text=True)
            lines = r.stderr.strip().splitlines()
            bt.check(r.returncode == 2 and len(lines) == 1 and message in lines[0] and broken in lines[0],
                     f"{name}: exit {r.returncode}, stderr {r.stderr.strip()!r}; want exit 2 and '{message}'")
            bt.check(not os.path.exists(out), f"{name}: no output file written")
        r = subprocess.run([sys.executable, generate, provider, "no-such-command", "-"], capture_output=True, text=True)
        bt.check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
                 f"an unknown command: exit {r.returncode} with one line ({r.stderr.strip()!r})")
    bt.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The segment fuzz target reaches the description parser with a mutated
description (issue 46, finding 9): a seed from the corpus with one byte of
its description changed and its header's hash left as it was, run once
through the libFuzzer target with -print_coverage=1, must cover the
parser's family lines (stats_layout.c: parse, line_family).  Before, the
target handed the reader the stale hash, the description failed its hash
check and the parser was never run: a mutation of the description tested
one compare.

    test_fuzz_reach.py FUZZER CORPUS_DIR
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

fuzzer, corpus = sys.argv[1], sys.argv[2]
DESC = struct.Struct("<QQQ")
DESC_AT = 8 + 4 + 4 + 8 + 8 + 4 + 4 + 8 + 4 * 4  # struct bs_header: desc_offset, desc_size, desc_hash
seed = os.path.join(corpus, sorted(os.listdir(corpus))[0])
data = bytearray(open(seed, "rb").read())
offset, size, _ = DESC.unpack_from(data, DESC_AT)
text = bytes(data[offset:offset + size - 1])
at = text.find(b"\nhelp ") + len(b"\nhelp ")
bt.check(at > len(b"\nhelp ") and text.startswith(b"billing-stats description"),
         "the seed %s holds a description with a help line" % os.path.basename(seed))
data[offset + at] ^= 0x20  # the help's first letter in the other case: a description as valid, another hash
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "mutated"), "wb") as f:
        f.write(data)
    p = subprocess.run([fuzzer, "-runs=0", "-max_len=%d" % (len(data) + 1), "-print_coverage=1", d],
                       capture_output=True, text=True, errors="replace", timeout=120)
covered = set(re.findall(r"(?m)^COVERED_FUNC: hits: [1-9]\d* edges: \d+/\d+ (\w+) \S*stats_layout\.c", p.stderr))
bt.check(p.returncode == 0, "the target ran the mutated seed (exit %d)" % p.returncode)
for fn in ("parse", "line_family", "line_label"):
    bt.check(fn in covered, "a description mutated in one byte reaches the parser: stats_layout.c's %s covered" % fn)
bt.finish()

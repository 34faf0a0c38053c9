#!/usr/bin/env python3
"""The segment reader against corrupt, truncated and hostile segments: each
is refused with one reason (stats_dump exits 1 with an "error"), never a
crash, a hang or a figure from a bad segment.  A valid segment from the
workload is the base; named edits hit each check, then 2,000 seeded random
edits (bytes, words, truncations) run through the reader built with
ASan+UBSan when the compiler has them (stats_dump_san)."""
import json
import os
import random
import signal
import struct
import subprocess
import tempfile

import statstest as st
from statstest import bt

st.require_built()
SAN = os.environ.get("BS_DUMP_SAN") or st.DUMP


def field_offset(name):
    """Byte offset of a bs_header field (FIELDS order, no padding)."""
    fmt = "<"
    for f, code in zip(st.FIELDS, ["8s", "I", "I", "Q", "Q", "I", "I", "Q", "I", "I", "I", "I", "Q", "Q", "Q", "Q",
                                   "Q", "Q", "Q", "I", "I"]):
        if f == name:
            return struct.calcsize(fmt), code
        fmt += code
    raise KeyError(name)


ROW_COUNT = struct.calcsize("<8sIIQQIIQIIIIQQQQQQQII")  # header's row_count[]
DICT_COUNT = ROW_COUNT + 32 * 4


def put(data, name, value):
    off, code = field_offset(name)
    struct.pack_into("<" + code, data, off, value)


def read_many(paths, dump):
    p = subprocess.run([dump] + paths, capture_output=True, text=True, timeout=600)
    return p


with tempfile.TemporaryDirectory() as tmp:
    p = st.run(["threads", 2, 500], {"BILLING_STATS_DIR": os.path.join(tmp, "s"), "BILLING_STATS_THREADS": "2"})
    segs = st.segments(p.stdout)
    base_path = segs[0][1] if segs else ""
    bt.check(p.returncode == 0 and base_path, "a valid segment to start from")
    base = bytearray(open(base_path, "rb").read())
    h = st.header(base)
    good = st.dump([base_path])[0]
    bt.check("error" not in good, "the untouched segment reads")

    cases = {}

    # A segment is mostly zeros (the native buckets of unused rows): each
    # edited copy is written sparse, the base's nonzero pages and the edit,
    # so 2,000 copies cost a few pages each instead of the whole file.
    PAGE = 4096
    base_pages = [(off, bytes(base[off:off + PAGE])) for off in range(0, len(base), PAGE)
                  if base[off:off + PAGE].count(0) != len(base[off:off + PAGE])]

    def write_edited(path, patches, length):
        """The base cut to length, with patches [(offset, bytes)] written over it."""
        with open(path, "wb") as f:
            for off, chunk in base_pages + patches:
                if off < length:
                    f.seek(off)
                    f.write(chunk[:length - off])
            f.truncate(length)

    def case(name, data):
        path = os.path.join(tmp, name.replace(" ", "_"))
        pages = [(off, bytes(data[off:off + PAGE])) for off in range(0, len(data), PAGE)
                 if data[off:off + PAGE] != base[off:off + PAGE]]
        write_edited(path, pages, len(data))
        cases[name] = path

    for n in (0, 7, 100, 4095, 4096, h["dicts_offset"] + 10, h["slots_offset"], len(base) - 1):
        case(f"truncated to {n}", base[:n])
    d = bytearray(base)
    d[0:8] = b"BILLSTAX"
    case("bad magic", d)
    d = bytearray(base)
    put(d, "layout_version", h["layout_version"] + 1)
    case("another layout version", d)
    d = bytearray(base)
    put(d, "endian", 0x04030201)
    case("other byte order", d)
    d = bytearray(base)
    d[h["desc_offset"] + 20] ^= 0x20
    case("description from another billing.d", d)
    d = bytearray(base)
    put(d, "desc_size", 1 << 40)
    case("description size huge", d)
    d = bytearray(base)
    put(d, "nmaps", 9)
    case("nmaps differs", d)
    d = bytearray(base)
    put(d, "nslots", 0xFFFFFFFF)
    case("nslots huge", d)
    d = bytearray(base)
    put(d, "slot_size", 1 << 62)
    case("slot size huge", d)
    d = bytearray(base)
    put(d, "slots_used", 9999)
    case("slots used past slots", d)
    d = bytearray(base)
    put(d, "slots_offset", len(base))
    case("slots past the end", d)
    d = bytearray(base)
    put(d, "dicts_offset", 1 << 63)
    case("dictionaries past the end", d)
    d = bytearray(base)
    put(d, "rows_offset", 0)
    case("rows over the header", d)
    d = bytearray(base)
    struct.pack_into("<I", d, ROW_COUNT, 1000)
    case("row count past the cap", d)
    d = bytearray(base)
    struct.pack_into("<I", d, DICT_COUNT, 65)
    case("label count past the cap", d)
    d = bytearray(base)
    rows_off = h["rows_offset"]
    d[rows_off] = 200  # map 0 row 0 names label value 200
    case("row names a value past its dictionary", d)
    # m_payment_auth's first row: its currency (field 1, EUR) named as a known value past the list
    pay = next(i for i, f in enumerate(st.METRICS.feeds) if f.map_name == "m_payment_auth")
    base_row = sum(128 + st.METRICS.fold_keys(f) + 1 for f in st.METRICS.feeds[:pay])  # BS_GENERAL_ROWS
    d = bytearray(base)
    d[rows_off + base_row * 4 + 1] = 253
    case("row names a known value past the list", d)
    d = bytearray(base)
    struct.pack_into("<Q", d, ROW_COUNT + 32 * 4 + 128 * 4, 8)
    case("map cells moved", d)

    p = read_many(list(cases.values()), SAN)
    out = [l for l in p.stdout.splitlines()]
    bt.check(p.returncode == 1 and len(out) == len(cases) and "ERROR: AddressSanitizer" not in p.stderr
             and "runtime error" not in p.stderr, f"the reader survives every named case (exit {p.returncode})")
    by_file = {json.loads(l)["file"]: json.loads(l) for l in out}
    for name, path in cases.items():
        r = by_file.get(path, {})
        bt.check("error" in r and "maps" not in r, f"{name}: refused ({r.get('error')})")

    # --- seeded random edits ------------------------------------------------------
    rnd = random.Random(18)
    paths = []
    for i in range(2000):
        patches, length = [], len(base)
        kind = i % 4
        if kind == 0:  # a byte of the header, description, dictionaries or rows
            for _ in range(rnd.randint(1, 4)):
                value = rnd.randrange(256)
                patches.append((rnd.randrange(0, h["slots_offset"]), bytes([value])))
        elif kind == 1:  # a header word set to an edge value
            off = rnd.randrange(0, 1152 // 4) * 4
            patches.append((off, struct.pack("<I", rnd.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF,
                                                               rnd.randrange(1 << 32)]))))
        elif kind == 2:  # truncated anywhere
            length = rnd.randrange(0, len(base))
        else:  # cells: any value is a figure, never a fault
            for _ in range(8):
                off = rnd.randrange(h["slots_offset"], len(base) - 8) // 8 * 8
                patches.append((off, struct.pack("<Q", rnd.randrange(1 << 64))))
        path = os.path.join(tmp, f"fuzz{i}")
        write_edited(path, patches, length)
        paths.append(path)
    p = read_many(paths, SAN)
    lines = p.stdout.splitlines()
    bt.check(p.returncode in (0, 1) and len(lines) == len(paths) and "AddressSanitizer" not in p.stderr
             and "runtime error" not in p.stderr,
             f"2,000 random edits: no crash, one answer each (exit {p.returncode}, {len(lines)} lines)")
    refused = sum(1 for l in lines if '"error"' in l)
    bt.check(0 < refused < len(paths), f"... {refused} refused, {len(paths) - refused} read (cells may be anything)")
    # A running writer's file is mapped by a reading that follows it: one
    # cut under that reading ends it (SIGBUS caught), the reading before
    # stays whole, and a fault outside any reading is not taken.
    p = subprocess.run([os.environ["BS_SHRINK_READING"]], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, BILLING_STATS_DIR=os.path.join(tmp, "shrink"),
                                ASAN_OPTIONS="handle_sigbus=0"))
    said = json.loads(p.stdout.splitlines()[0])["shrink"] if p.stdout.strip() else {}
    bt.check(said.get("mapped") == 1 and said.get("rc") == -1 and "shrank" in said.get("error", "")
             and said.get("rows_kept", 0) > 0,
             f"a file cut under a mapped reading: refused, the reading before kept ({said or p.stderr.strip()})")
    bt.check(p.returncode == -signal.SIGBUS, f"... a fault outside a reading still ends the program (exit {p.returncode})")
bt.finish()

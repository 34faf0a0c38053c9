#!/usr/bin/env python3
"""The reader's work is bounded by what a segment uses, never by what its
header claims: a sparse file of tens of kB whose header claims 65,537 thread slots
with every row in use, and a file whose blocks are all there but whose
counts ask for more than BS_READ_BUDGET, are each refused with one line
after reading no more than the header, the description and the tables'
counts (the reader's own work figures, stats_dump "work"), within a
generous CPU bound.  billing-exporter serves a real segment beside five
such sparse files: one line each, and a scrape's CPU far below what
reading them would take."""
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

import statstest as st
from statstest import bt

sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
import exportertest as et  # noqa: E402

st.require_built()
EXPORTER = os.environ.get("BX_EXPORTER", "")
SAN = os.environ.get("BS_DUMP_SAN") or st.DUMP
BUDGET = 32 << 20  # BS_READ_BUDGET (tools/stats-reader/stats_read.h)
HEAD = struct.calcsize("<8sIIQQIIQIIIIQQQQQQQII")
ROW_COUNT, MAP_CELLS = HEAD, HEAD + 32 * 4 + 128 * 4 + 32 * 8  # header's row_count[], map_cells[]


def put(data, name, value):
    fmt = "<"
    for f, code in zip(st.FIELDS, "8s I I Q Q I I Q I I I I Q Q Q Q Q Q Q I I".split()):
        if f == name:
            struct.pack_into("<" + code, data, struct.calcsize(fmt), value)
            return
        fmt += code
    raise KeyError(name)


TRAIL_OFFSET = MAP_CELLS + 32 * 4  # header's trail_offset, after map_cells[]


def no_trails(data):
    """The header's trails' ring gone (offset 0), so the slots may end
    where the counts below say: the budget is what must refuse them."""
    struct.pack_into("<Q", data, TRAIL_OFFSET, 0)


NATIVE_OFFSET = TRAIL_OFFSET + 8  # header's native_offset, native_size


def native_after(data, end):
    """The header's native buckets moved to end (where the slots the
    counts claim end): the file's size to give them room."""
    native_size = struct.unpack_from("<Q", data, NATIVE_OFFSET + 8)[0]
    struct.pack_into("<Q", data, NATIVE_OFFSET, end if native_size else 0)
    return end + native_size


def every_row_used(data, h):
    for m in range(h["nmaps"]):
        struct.pack_into("<I", data, ROW_COUNT + 4 * m, h["rows_per_map"])


def write_sparse(path, head, size):
    """head, then a hole up to size: only head's pages are allocated."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


def read(path):
    """stats_dump's line for path, and the CPU seconds it took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([SAN, path], capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    lines = p.stdout.splitlines()
    return (st.json.loads(lines[0]) if lines else {"error": p.stderr}), cpu


with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
    p = st.run(["threads", 2, 500], {"BILLING_STATS_DIR": os.path.join(tmp, "s"), "BILLING_STATS_THREADS": "2"})
    segs = st.segments(p.stdout)
    bt.check(p.returncode == 0 and segs, "a valid segment to start from")
    base = bytearray(open(segs[0][1], "rb").read())
    h = st.header(base)
    table_bytes = h["slots_offset"] + 4096  # header, description, dictionaries, rows: what a refusal may read

    # 1. Sparse: 36 kB written, 65,537 slots claimed, every row of every map in use.
    d = bytearray(base[:h["slots_offset"]])
    put(d, "nslots", 65537)
    put(d, "slots_used", 65537)
    every_row_used(d, h)
    no_trails(d)
    size = native_after(d, h["slots_offset"] + 65537 * h["slot_size"])
    put(d, "size", size)
    sparse = os.path.join(tmp, "sparse.stats")
    write_sparse(sparse, d, size)
    sparse_head = bytes(d)
    held = os.stat(sparse).st_blocks * 512
    out, cpu = read(sparse)
    bt.check("error" in out and "work" in out and out["work"]["bytes"] <= table_bytes and out["work"]["slots"] == 0,
             f"a {held >> 10} kB file claiming 65,537 slots of {size >> 20} MiB: refused after reading at most "
             f"{table_bytes} bytes and no slot: {str(out)[:300]}")
    bt.check(cpu < 2.0, f"... within 2 s of CPU ({cpu:.3f} s)")
    print(f"sparse: {out.get('error')}; {out.get('work')}; {cpu:.3f} s CPU")

    # 2. Every block there, but counts asking for more than the budget.
    cells = struct.unpack_from("<%dI" % h["nmaps"], base, MAP_CELLS)
    per_slot = sum(h["rows_per_map"] * c * 8 for c in cells)
    slots = BUDGET // per_slot + 2
    d = bytearray(base[:h["slots_offset"]])
    put(d, "nslots", slots)
    put(d, "slots_used", slots)
    every_row_used(d, h)
    no_trails(d)
    size = native_after(d, h["slots_offset"] + slots * h["slot_size"])
    put(d, "size", size)
    full = os.path.join(tmp, "full.stats")
    with open(full, "wb") as f:
        f.write(d)
        chunk = b"\1" * (1 << 20)  # written, not holes: the blocks are there
        left = size - len(d)
        while left:
            left -= f.write(chunk[:min(left, len(chunk))])
    out, cpu = read(full)
    bt.check("error" in out and "budget" in out["error"] and out["work"]["bytes"] <= table_bytes,
             f"{slots} written slots whose rows ask for {slots * per_slot >> 20} MiB: refused over the budget, "
             f"after reading at most {table_bytes} bytes: {str(out)[:300]}")
    bt.check(cpu < 2.0, f"... within 2 s of CPU ({cpu:.3f} s)")
    print(f"over budget: {out.get('error')}; {out.get('work')}; {cpu:.3f} s CPU")

    # 3. The untouched segment reads what it uses: its claimed slots, its rows.
    out, _ = read(segs[0][1])
    used = sum(len(v) for v in out.get("maps", {}).values())
    bt.check("error" not in out and out["work"]["slots"] == h["slots_used"] + h["overflow_used"]
             and out["work"]["rows"] == used,
             f"the valid segment: {h['slots_used']} slot(s) summed, {used} rows decoded: {out.get('work')}")

    # 4. The exporter beside five sparse claims: the real segment served, each claim one line.
    if not EXPORTER or not os.path.exists(EXPORTER):
        print("the exporter part not run: BX_EXPORTER not built (-Dexporter)")
    else:
        d = os.path.join(tmp, "dir")
        os.mkdir(d, 0o700)
        shutil.copy(segs[0][1], d)
        for i in range(5):
            write_sparse(os.path.join(d, f"{900000 + i}.stats"), sparse_head, os.path.getsize(sparse))
        ex = et.Exporter(EXPORTER, "--stats-dir", d, timeout=120)
        try:
            pid = ex.proc.pid
            with open(f"/proc/{pid}/stat") as f:
                before = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
            served = [et.total(ex.samples(), "billing_payments_total") for _ in range(3)]
            with open(f"/proc/{pid}/stat") as f:
                cpu = (sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13]) - before) / os.sysconf("SC_CLK_TCK")
        finally:
            _, log = ex.stop()
        want = sum(r["cells"][0] for r in st.rows(st.dump([segs[0][1]])[0], "m_payment_auth"))
        said = [line for line in log.splitlines() if "threads' slots" in line]
        bt.check(served == [want] * 3, f"the real segment's {want} payments served in each of 3 scrapes: {served}")
        bt.check(len(said) == 5, f"each sparse claim said once ({len(said)} lines): {said[:2]}")
        bt.check(cpu < 1.0, f"3 scrapes beside five sparse claims: {cpu:.2f} s of CPU (bound 1 s)")
bt.finish()

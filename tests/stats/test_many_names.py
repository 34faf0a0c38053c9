#!/usr/bin/env python3
"""A --stats-dir full of names that are not segments: 30,000 empty
*.stats files and 1,000 of junk (a page each, no magic) beside one real
segment.  billing-exporter refreshes it with memory bounded per name, and
a refresh after the first does no per-name work for names that have not
changed: no junk file is read again (the process's read calls, from
/proc/PID/io, stay those of the one real segment), and a scrape's CPU
time is far from a per-name open and read.  The real segment's figures
are served all along."""
import os
import sys
import tempfile
import time

import statstest as st
from statstest import bt

sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
import exportertest as h  # noqa: E402

st.require_built()
exe = os.environ.get("BX_EXPORTER", "")
if not exe or not os.path.exists(exe):
    bt.skip("BX_EXPORTER not built (-Dexporter)")
EMPTY, JUNK = 30000, 1000
SETTLE_S = 2  # BX_SETTLE_S (stats_targets.c): a refused content stands once the file is that old
PER_NAME_BYTES = 1024


def proc_field(pid, name, field):
    with open(f"/proc/{pid}/{name}") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def requests(ex):
    return h.total(ex.samples(), "billing_requests_total")


with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
    d = os.path.join(tmp, "segments")
    p = st.run(["labels", 64], {"BILLING_STATS_DIR": d})
    bt.check(p.returncode == 0 and st.segments(p.stdout), "one real segment")

    alone = h.Exporter(exe, "--stats-dir", d)
    want = requests(alone)
    requests(alone)
    hwm_alone = proc_field(alone.proc.pid, "status", "VmHWM")
    alone.stop()
    bt.check(want > 0, f"the segment alone: {want:.0f} requests, exporter peak {hwm_alone} kB")

    made = time.monotonic()
    for i in range(JUNK):
        with open(os.path.join(d, f"{1000000 + i}.stats"), "wb") as f:
            f.write(b"not a segment\n" * 300)
    for i in range(EMPTY):
        open(os.path.join(d, f"{2000000 + i}.stats"), "wb").close()
    # The junk's refusal stands once the files are older than the writer's
    # initialisation window (a header read before its magic is read again).
    bt.wait_for("the junk files to settle", lambda: time.monotonic() - made > SETTLE_S + 1, timeout=30)

    ex = h.Exporter(exe, "--stats-dir", d, timeout=120)
    try:
        first = requests(ex)  # the start read every name once; this refresh is the second
        pid = ex.proc.pid
        reads, cpu = proc_field(pid, "io", "syscr"), cpu_s(pid)
        again = requests(ex)
        reads, cpu = proc_field(pid, "io", "syscr") - reads, cpu_s(pid) - cpu
        hwm = proc_field(pid, "status", "VmHWM")
        print(ex.output()[-600:])
    finally:
        ex.stop()
    bt.check(first == want and again == want, f"the real segment's {want:.0f} requests served beside "
             f"{EMPTY + JUNK:,} other names ({first:.0f}, {again:.0f})")
    bt.check(reads < JUNK // 4, f"a refresh reads no unchanged junk file again: {reads} read calls in a scrape "
             f"({JUNK} junk files)")
    bt.check(cpu < 1.0, f"a scrape over {EMPTY + JUNK:,} unchanged names: {cpu:.2f} s of CPU (bound 1 s)")
    per_name = (hwm - hwm_alone) * 1024 / (EMPTY + JUNK)
    bt.check(per_name <= PER_NAME_BYTES, f"memory per name: {per_name:.0f} bytes at the peak "
             f"({hwm} kB against {hwm_alone} kB alone; bound {PER_NAME_BYTES})")
bt.finish()

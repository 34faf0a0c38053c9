#!/usr/bin/env python3
"""Pre-fork: a parent fires P, forks W workers of N fires each, SIGKILLs
worker 0 once it has fired and forks a replacement.  Every process has a
segment of its own: the parent's holds exactly P (no child added to it),
each worker's exactly N (a child never counts in its parent's slots), the
killed worker's segment stays readable with its N, and the service total
over the directory is exactly P + (W + 1) N.  Then a writer SIGKILLed while
busy leaves a segment the reader reads, histograms whole to one fire."""
import os
import signal
import subprocess
import tempfile
import time

import statstest as st
from statstest import bt

st.require_built()
W, N, P = 4, 5000, 3000
PAY = "m_payment_auth"


def payments(seg):
    return sum(r["cells"][0] for r in st.rows(seg, PAY))


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "stats")
    p = st.run(["fork", W, N, P], {"BILLING_STATS_DIR": d}, timeout=300)
    segs = st.segments(p.stdout)
    bt.check(p.returncode == 0, f"fork workload ran ({p.stderr.strip()})")
    pids = [pid for pid, _ in segs]
    bt.check(len(segs) == W + 2 and len(set(pids)) == W + 2 and all(path for _, path in segs),
             f"{W + 2} processes (parent, {W} workers, 1 replacement), each its own segment ({len(set(pids))})")
    files = sorted(os.path.join(d, f) for f in os.listdir(d)) if os.path.isdir(d) else []
    bt.check(sorted(path for _, path in segs) == files, "the directory holds exactly those segments")
    dumped = {s["pid"]: s for s in st.dump(files)}
    bt.check(all("error" not in s for s in dumped.values()), "every segment reads, the killed worker's too")
    parent = dumped.get(segs[0][0]) if segs else None
    bt.check(parent is not None and payments(parent) == P,
             f"the parent's segment holds exactly its own {P} ({parent and payments(parent)}): no child counted in it")
    workers = [dumped.get(pid) for pid in pids[1:]]
    bt.check(all(w is not None and payments(w) == N for w in workers),
             f"each worker's segment holds exactly {N} ({[w and payments(w) for w in workers]})")
    bt.check(all(s is not None and st.native_whole(s, PAY) for s in [parent] + workers),
             "each process's native buckets hold its own observations once (a child never counts in its parent's)")
    killed_pid = [int(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("killed ")]
    killed = dumped.get(killed_pid[0]) if killed_pid else None
    bt.check(killed is not None and killed["state"] == 1,
             "the SIGKILLed worker's segment says running (no exit ran) and still reads")
    total = sum(payments(s) for s in dumped.values() if "error" not in s)
    bt.check(total == P + (W + 1) * N, f"service total over the directory {total} == {P + (W + 1) * N}")

    # --- a writer killed while it counts --------------------------------------
    bd = os.path.join(tmp, "busy")
    proc = subprocess.Popen([st.WORKLOAD, "busy"], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, BILLING_STATS_DIR=bd))
    line = proc.stdout.readline()
    path = line.split(" ", 2)[2].strip() if line.startswith("segment") else ""
    bt.check(bool(path), f"busy writer made a segment ({line.strip()!r})")
    seen, deadline = 0, time.monotonic() + 120
    while path and seen < 200000 and time.monotonic() < deadline:
        s = st.dump([path])[0]
        seen = payments(s) if "error" not in s else 0
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    s = st.dump([path])[0] if path else {"error": "no segment"}
    bt.check("error" not in s and payments(s) >= seen >= 200000,
             f"killed mid-update: the segment reads, {s.get('error') or payments(s)} fires >= {seen} seen while it ran")
    if "error" not in s:
        lay = st.cells_layout(PAY)
        for r in st.rows(s, PAY):
            c = r["cells"]
            for q in ("amount_minor", "duration_ns"):
                c0, n = lay[q]
                bt.check(abs(c[c0] - sum(c[c0 + 2:c0 + 2 + n])) <= 1,
                         f"killed mid-update: {r['labels'][0]} {q}: count {c[c0]} and its buckets differ by <= 1")
bt.finish()

#!/usr/bin/env python3
"""The stats writer, exact: 8 threads x N fires; 10,000 short-lived threads
with bounded memory and reused slots; label folding past 64 values with
outcomes kept exact; the file's place and modes (0600, a group's 0640, a
directory others can write or a symlink refused); BILLING_STATS=off."""
import grp
import os
import stat
import tempfile
import time

import statstest as st
from statstest import bt

st.require_built()
N = 20000
PAY, REQ = "m_payment_auth", "m_request_done"


def expected_payments(threads, n, gateway_of):
    """{(gateway, result): (count, amount sum, amount buckets, duration buckets)}."""
    lay = st.cells_layout(PAY)
    out = {}
    for t in range(threads):
        for i in range(n):
            result = 51 if i % 4 == 0 else 0
            key = (gateway_of(t), result)
            e = out.setdefault(key, [0, 0, [0] * lay["amount_minor"][1], [0] * lay["duration_ns"][1], 0])
            amount = (i % 1000) * 37 - 2000
            e[0] += 1
            e[1] += amount
            e[2][st.bucket("amount_minor", amount)] += 1
            b = st.bucket("duration_ns", (i % 7) * 1000000)
            if b is not None:
                e[3][b] += 1
                e[4] += (i % 7) * 1000000
    return out


def check_payments(seg, expected, what):
    lay = st.cells_layout(PAY)
    got = {}
    for r in st.rows(seg, PAY):
        c = r["cells"]
        a0, an = lay["amount_minor"]
        d0, dn = lay["duration_ns"]
        got[(r["labels"][0], r["ints"][2])] = [c[0], st.u64_signed(c[a0 + 1]), c[a0 + 2:a0 + 2 + an],
                                               c[d0 + 2:d0 + 2 + dn], c[d0 + 1]]
        bt.check(r["labels"][1] == "EUR", f"{what}: currency label EUR ({r['labels'][1]!r})")
    for key, e in sorted(expected.items()):
        g = got.get(key)
        bt.check(g is not None and g[0] == e[0], f"{what}: payments {key}: count {g and g[0]} == {e[0]}")
        bt.check(g is not None and g[1] == e[1], f"{what}: payments {key}: amount sum {g and g[1]} == {e[1]}")
        bt.check(g is not None and g[2] == e[2], f"{what}: payments {key}: amount buckets exact")
        bt.check(g is not None and g[3] == e[3] and g[4] == e[4],
                 f"{what}: payments {key}: duration buckets and sum exact (0 not observed)")
    bt.check(set(got) == set(expected), f"{what}: no other payment rows ({sorted(set(got) - set(expected))})")


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "stats")
    env = {"BILLING_STATS_DIR": d}

    # --- 8 threads x N ------------------------------------------------------
    p = st.run(["threads", 8, N], env)
    segs = st.segments(p.stdout)
    bt.check(p.returncode == 0 and len(segs) == 1 and segs[0][1], f"threads: ran, one segment ({p.stderr.strip()})")
    path = segs[0][1] if segs else ""
    seg = st.dump([path])[0] if path else {"error": "no segment"}
    bt.check("error" not in seg, f"threads: the reader reads the segment ({seg.get('error')})")
    if "error" not in seg:
        check_payments(seg, expected_payments(8, N, lambda t: "gw-a" if t % 2 == 0 else "gw-b"), "8 threads")
        req = st.rows(seg, REQ)
        lay = st.cells_layout(REQ)
        d0, dn = lay["duration_ns"]
        bt.check(len(req) == 1 and req[0]["labels"][:2] == ["payment.authorize", "0"] and req[0]["cells"][0] == 8 * N,
                 f"8 threads: request-done count {req and req[0]['cells'][0]} == {8 * N}")
        measured = 8 * sum(1 for i in range(N) if i % 100)
        bt.check(len(req) == 1 and req[0]["cells"][d0] == measured == sum(req[0]["cells"][d0 + 2:d0 + 2 + dn]),
                 f"8 threads: request durations observed {req and req[0]['cells'][d0]} == {measured} (0 is not measured)")
        bt.check(st.native_whole(seg, REQ) and st.native_whole(seg, "m_payment_auth"),
                 "8 threads: every observation once in the native buckets the threads share (atomic adds)")
        bt.check(1 <= seg["slots_used"] <= 8 and seg["overflow_used"] == 0,
                 f"8 threads: {seg['slots_used']} slots used (1..8), no overflow slot")
        bt.check(seg["state"] == 2 and seg["pid"] == segs[0][0], "8 threads: the segment says its writer exited, and its pid")
        mode = os.stat(path).st_mode
        bt.check(stat.S_IMODE(mode) == 0o600, f"segment mode {oct(stat.S_IMODE(mode))} is 0600")
        bt.check(stat.S_IMODE(os.stat(d).st_mode) == 0o700, f"directory mode {oct(stat.S_IMODE(os.stat(d).st_mode))} is 0700")

    # --- 10,000 short-lived threads ------------------------------------------
    # Under ASan its quarantine keeps freed memory (thread stacks, the
    # per-thread caches) by design: off for this run, so RSS means growth.
    asan = os.environ.get("ASAN_OPTIONS", "")
    p = st.run(["short", 10000, 8, 10], dict(env, ASAN_OPTIONS=(asan + ":" if asan else "")
                                             + "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"))
    segs = st.segments(p.stdout)
    rss = [l.split() for l in p.stdout.splitlines() if l.startswith("rss_kb")]
    seg = st.dump([segs[0][1]])[0] if segs and segs[0][1] else {"error": "no segment"}
    bt.check(p.returncode == 0 and "error" not in seg, f"short threads: ran and read ({seg.get('error')})")
    if "error" not in seg:
        req = st.rows(seg, REQ)
        total = sum(r["cells"][0] for r in req)
        bt.check(total == 10000 * 10 + 1, f"10,000 short-lived threads: {total} == 100,001 fires (none lost at exit)")
        bt.check(seg["slots_used"] <= 9 and seg["overflow_used"] == 0,
                 f"10,000 threads: {seg['slots_used']} slots used (<= 8 alive + main): slots reused")
    if rss:
        grow = int(rss[0][2]) - int(rss[0][1])
        bt.check(grow < 4096, f"10,000 threads: RSS grew {grow} kB after the first 1,000 (< 4 MB: bounded)")
    else:
        bt.check(False, "short threads: printed its RSS")

    # --- labels: 64 values, then "other"; outcome exact ----------------------
    p = st.run(["labels", 100], env)
    segs = st.segments(p.stdout)
    seg = st.dump([segs[0][1]])[0] if segs and segs[0][1] else {"error": "no segment"}
    bt.check(p.returncode == 0 and "error" not in seg, f"labels: ran and read ({seg.get('error')})")
    if "error" not in seg:
        req = {r["labels"][0]: r for r in st.rows(seg, REQ)}
        kept = {f"h{i:03d}" for i in range(64)}
        bt.check(set(req) == kept | {"other"}, f"labels: handlers h000..h063 kept, the rest 'other' ({len(req)} rows)")
        bt.check(all(req[h]["cells"][0] == 1 for h in kept if h in req), "labels: each kept handler counted once")
        bt.check("other" in req and req["other"]["cells"][0] == 37 and req["other"]["state"][0] == 1,
                 f"labels: 36 more handlers and the cut long one folded: other == 37 "
                 f"({'other' in req and req['other']['cells'][0]})")
        pay = st.rows(seg, PAY)
        approved = sum(r["cells"][0] for r in pay if r["state"][2] == 0 and r["ints"][2] == 0)
        declined = sum(r["cells"][0] for r in pay if not (r["state"][2] == 0 and r["ints"][2] == 0))
        folded = [r for r in pay if r["state"][2] == 1]
        bt.check(approved == 1 and declined == 99, f"labels: outcome exact past the cap: 1 approved, 99 declined "
                 f"({approved}, {declined})")
        bt.check(len(folded) == 1 and folded[0]["cells"][0] == 36 and folded[0]["ints"][2] != 0,
                 "labels: results 64..99 folded into one 'other' row known to be non-zero")
        err = st.rows(seg, "m_error")
        bt.check(len(err) == 1 and err[0]["labels"][:2] == ["", "7"] and err[0]["cells"][0] == 1,
                 f"labels: a NULL component counts as \"\" ({err})")

    # --- segments of gone processes: kept, then removed once stale ------------
    # Copies of an exited writer's segment: one unchanged for 2 h (stale),
    # one just written; the next writer of the directory removes only the
    # stale one, and never a live writer's (its own, the stale copy's
    # namesake is dead) or a file that is not a segment.
    sd = os.path.join(tmp, "stale")
    p = st.run(["threads", 1, 10], {"BILLING_STATS_DIR": sd})
    old = st.segments(p.stdout)[0][1]
    data = open(old, "rb").read()
    stale, fresh, other = (os.path.join(sd, n) for n in ("4000001.stats", "4000002.stats", "notes.txt"))
    for path in (stale, fresh, other):
        open(path, "wb").write(data)
    for path in (stale, other):
        os.utime(path, (time.time() - 7200, time.time() - 7200))
    p = st.run(["threads", 1, 10], {"BILLING_STATS_DIR": sd})
    bt.check(p.returncode == 0 and not os.path.exists(stale),
             "a new writer removes segments of gone processes unchanged for an hour")
    bt.check(os.path.exists(fresh) and os.path.exists(old) and os.path.exists(other),
             "... and keeps a recent one (its final counts, for readers) and a file that is no segment")
    p = st.run(["threads", 1, 10], {"BILLING_STATS_DIR": sd, "BILLING_STATS_KEEP": "0"})
    bt.check(not os.path.exists(fresh) and not os.path.exists(old) and os.path.exists(other),
             "BILLING_STATS_KEEP=0: gone processes' segments removed at once")

    # --- a group may read: 0640, directory 0750 --------------------------------
    gd = os.path.join(tmp, "group")
    group = grp.getgrnam("nogroup") if "nogroup" in {g.gr_name for g in grp.getgrall()} else None
    if group is None:
        bt.check(False, "group nogroup exists (Debian base)")
    else:
        p = st.run(["threads", 1, 10], {"BILLING_STATS_DIR": gd, "BILLING_STATS_GROUP": "nogroup"})
        segs = st.segments(p.stdout)
        path = segs[0][1] if segs else ""
        ok = p.returncode == 0 and path and os.path.exists(path)
        bt.check(ok, f"BILLING_STATS_GROUP=nogroup: segment made ({p.stderr.strip()})")
        if ok:
            s = os.stat(path)
            bt.check(stat.S_IMODE(s.st_mode) == 0o640 and s.st_gid == group.gr_gid,
                     f"group segment: mode {oct(stat.S_IMODE(s.st_mode))} == 0640, group nogroup")
            s = os.stat(gd)
            bt.check(stat.S_IMODE(s.st_mode) == 0o750 and s.st_gid == group.gr_gid,
                     f"group directory: mode {oct(stat.S_IMODE(s.st_mode))} == 0750, group nogroup")

    # --- refused places: others may write; a symlink ---------------------------
    wd = os.path.join(tmp, "world")
    os.mkdir(wd)
    os.chmod(wd, 0o777)
    p = st.run(["threads", 1, 10], {"BILLING_STATS_DIR": wd})
    segs = st.segments(p.stdout)
    lines = p.stderr.strip().splitlines()
    bt.check(p.returncode == 0 and segs and segs[0][1] == "" and os.listdir(wd) == [],
             "a directory others can write: no segment, the service runs on")
    bt.check(len(lines) == 1 and "is writable by others (mode 0777): not used" in lines[0], f"... said in one line ({lines})")
    link = os.path.join(tmp, "link")
    os.symlink(d, link)
    p = st.run(["threads", 1, 10], {"BILLING_STATS_DIR": link})
    segs = st.segments(p.stdout)
    bt.check(p.returncode == 0 and segs and segs[0][1] == "" and len(p.stderr.strip().splitlines()) == 1,
             f"a symlink as the directory: refused in one line ({p.stderr.strip()})")

    # --- BILLING_STATS=off --------------------------------------------------------
    od = os.path.join(tmp, "off")
    p = st.run(["threads", 2, 1000], {"BILLING_STATS_DIR": od, "BILLING_STATS": "off"})
    segs = st.segments(p.stdout)
    bt.check(p.returncode == 0 and segs and segs[0][1] == "" and not os.path.exists(od) and not p.stderr,
             "BILLING_STATS=off: no segment, no directory, nothing said")
bt.finish()

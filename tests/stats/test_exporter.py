#!/usr/bin/env python3
"""billing-exporter from stats segments, no BPF:
  - as nobody, reading a 0640 segment through its group (a 0700 directory
    is refused in one line); the totals exact;
  - a service whose writers come and go (--stats-dir, not there yet when
    the exporter starts: waited for, then read): pre-fork workers,
    one SIGKILLed and replaced, a segment file removed: the service's
    counters exact and never lower than a scrape before;
  - billingd built with stats under billing-load (--pid, --source stats):
    exporter totals == billing-load == database rows; SIGKILL of billingd:
    /metrics still serves, target_up 0."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import statstest as st
from statstest import bt

sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
sys.path.insert(0, os.path.join(st.HERE, "..", "billingd"))
import exportertest as h  # noqa: E402
from billingdtest import Billingd, run_load  # noqa: E402  (tests/billingd/billingdtest.py)

st.require_built()
exe = h.env_path("BX_EXPORTER")
billingd_exe, load_exe = h.env_path("BS_BILLINGD"), h.env_path("BX_BILLING_LOAD")
if os.geteuid() != 0:
    bt.skip("runs the exporter as nobody and makes group-owned segments: needs root (CI runs as root)")
bt.require_program("setpriv", "util-linux")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", exe]


def pay_total(samples, **want):
    return h.total(samples, "billing_payments_total", **want)


base = tempfile.mkdtemp(prefix="billing-stats-exporter-")
os.chmod(base, 0o755)  # nobody may traverse; the stats directories decide the rest
exporters = []
try:
    # --- nobody through a group -------------------------------------------------
    d = os.path.join(base, "group")
    p = st.run(["threads", 4, 5000], {"BILLING_STATS_DIR": d, "BILLING_STATS_GROUP": "nogroup"})
    bt.check(p.returncode == 0, f"workload wrote a group-readable segment ({p.stderr.strip()})")
    ex = h.Exporter(NOBODY[0], *NOBODY[1:], "--stats-dir", d)
    exporters.append(ex)
    uid = [l.split()[1] for l in open(f"/proc/{ex.proc.pid}/status") if l.startswith("Uid:")]
    bt.check(uid == ["65534"], f"the exporter runs as nobody (uid {uid})")
    s = ex.samples()
    bt.check(pay_total(s, outcome="approved") == 15000 and pay_total(s, outcome="declined") == 5000,
             f"as nobody: payments 15000 approved / 5000 declined ({pay_total(s, outcome='approved')} / "
             f"{pay_total(s, outcome='declined')})")
    bt.check(h.total(s, "billing_requests_total") == 20000, "as nobody: 20000 requests")
    bt.check(h.total(s, "billing_exporter_target_source", target="stats:" + d, source="stats") == 1,
             "target_source says stats")
    bt.check(h.total(s, "billing_exporter_target_up", target="stats:" + d) == 0,
             "target_up 0: the segment's writer has exited")
    bt.check("0 probe attachments on 0 target(s), 1 stats target(s)" in ex.output(), "no BPF loaded")
    # The inventory: the segment's probe set is the exporter's own (one
    # billing.d), its probes those with metrics ("@@group" in billing.d).
    fed = len(re.findall(r"^\s*\*\s*@@group \w+", open(os.environ["BS_PROVIDER_D"]).read(), flags=re.M))
    own = [dict(k[1]) for k in s if k[0] == "billing_exporter_build_info"]
    info = [dict(k[1]) for k in s if k[0] == "billing_exporter_target_build_info"]
    bt.check(len(own) == 1 and info == [{"target": "stats:" + d, "source": "stats", "probes": str(fed),
                                         "probe_set": own[0]["probe_set"]}],
             f"billing_exporter_target_build_info: the segment's {fed} probes with metrics, the exporter's probe set "
             f"({info}, {own})")
    ex.stop()

    private = os.path.join(base, "private")
    p = st.run(["threads", 1, 10], {"BILLING_STATS_DIR": private})
    r = h.bt.run(NOBODY + ["--stats-dir", private, "--once", "--interval", "1"], timeout=60)
    lines = r.stderr.strip().splitlines()
    bt.check(r.returncode == 2 and len(lines) == 1 and "Permission denied" in lines[0],
             f"a 0700 stats directory: nobody is refused in one line, exit 2 ({r.returncode}, {lines})")

    # --- a segment found by name alone must be the process's own ------------
    # A gone writer's segment renamed after a live process's PID, in a
    # directory under /dev/shm: --pid reads only the file the process maps
    # (or PID.stats in its own user's directory), so not this one.
    decoy_dir = tempfile.mkdtemp(prefix="billing-stats-test", dir="/dev/shm")
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        src = next(os.path.join(d, f) for f in os.listdir(d))
        with open(src, "rb") as a, open(os.path.join(decoy_dir, f"{sleeper.pid}.stats"), "wb") as b:
            b.write(a.read())
        r = h.bt.run([exe, "--pid", str(sleeper.pid), "--source", "stats", "--once", "--interval", "1"], timeout=60)
        bt.check(r.returncode == 2 and "no stats segment found" in r.stderr,
                 f"a stale PID.stats of another process is not taken for --pid's ({r.returncode}, {r.stderr.strip()})")
    finally:
        sleeper.kill()
        sleeper.wait()
        shutil.rmtree(decoy_dir, ignore_errors=True)

    # --- writers come and go: service counters exact and monotonic -----------
    # The directory is not there yet when the exporter starts (a service
    # that starts after its exporter makes it): waited for, no figure until
    # it appears, then read like any other.
    svc = os.path.join(base, "service")
    ex = h.Exporter(exe, "--stats-dir", svc)
    exporters.append(ex)
    s = ex.samples()
    bt.check(f"--stats-dir {svc}: not there yet" in ex.output() and
             not any(k[0] == "billing_payments_total" for k in s) and
             h.total(s, "billing_exporter_target_up", target="stats:" + svc) == 0,
             f"a --stats-dir not there yet: said in one line, no payments series, target_up 0 ({ex.output()})")
    seen = [pay_total(s)]
    p = st.run(["fork", 3, 2000, 1000], {"BILLING_STATS_DIR": svc})
    seen.append(pay_total(ex.samples()))
    bt.check(p.returncode == 0 and seen[-1] == 1000 + 4 * 2000,
             f"pre-fork parent + 3 workers, one SIGKILLed and replaced: service total {seen[-1]} == 9000")
    bt.check(f"--stats-dir {svc}: appeared: the segments of uid 0 (root)" in ex.output(),
             f"the directory's appearance and owner said once it is there ({ex.output()})")
    victim = sorted(os.listdir(svc))[-1]
    os.unlink(os.path.join(svc, victim))
    seen.append(pay_total(ex.samples()))
    bt.check(seen[-1] == 9000, f"a segment file removed: its last reading kept ({seen[-1]})")
    p = st.run(["threads", 1, 500], {"BILLING_STATS_DIR": svc})
    seen.append(pay_total(ex.samples()))
    bt.check(seen[-1] == 9500, f"a later writer adds to the service total ({seen[-1]} == 9500)")
    # A later process given a known path (a reused PID): another segment,
    # another generation, at a path the exporter has read.  The old reading
    # stays in the total; the new one adds.
    files = sorted(os.listdir(svc), key=lambda f: os.path.getmtime(os.path.join(svc, f)))
    newest, reused = os.path.join(svc, files[-1]), os.path.join(svc, files[0])
    tmpcopy = reused + ".new"
    with open(newest, "rb") as src, open(tmpcopy, "wb") as dst:
        dst.write(src.read())
    os.chmod(tmpcopy, 0o600)
    os.rename(tmpcopy, reused)
    seen.append(pay_total(ex.samples()))
    bt.check(seen[-1] == 10000, f"a path taken by a later segment: the old reading kept, the new one added "
             f"({seen[-1]} == 10000)")
    bt.check(all(a <= b for a, b in zip(seen, seen[1:])), f"the service total never went back: {seen}")
    ex.stop()

    # --- native cells left behind by text scrapes ------------------------------
    # A text scrape serves no native buckets and leaves a running writer's
    # native cells behind its counts; a protobuf scrape brings them up to
    # date: then they are a fresh exporter's, series for series.  A writer
    # whose segment is removed while its native cells are behind leaves
    # its label sets without native buckets (their classic ones exact);
    # one caught up first leaves them whole.
    def native_of(e):
        return h.native_histograms(h.http_get(e.url + "/metrics", {"Accept": h.PROTOBUF})[2])

    def step(ws):
        for w in ws:
            w.stdin.write("step\n")
            w.stdin.flush()
        bt.check(all(w.stdout.readline().strip() == "fired" for w in ws), f"{len(ws)} writers fired every label set")

    writers, paths, followers = {}, {}, {}
    for case in ("behind", "caught up"):
        d = os.path.join(base, "native " + case)
        env = dict(os.environ, BILLING_STATS_DIR=d)
        writers[case] = [subprocess.Popen([st.WORKLOAD, "full", "3", "step"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, env=env, text=True) for _ in range(2)]
        paths[case] = [w.stdout.readline().split(" ", 2)[2].strip() for w in writers[case]]
        followers[case] = h.Exporter(exe, "--stats-dir", d)
        exporters.append(followers[case])
    ex = followers["behind"]
    for _ in range(3):
        step(writers["behind"])
        ex.metrics()
    got = native_of(ex)
    fresh = h.Exporter(exe, "--stats-dir", os.path.dirname(paths["behind"][0]))
    want = native_of(fresh)
    fresh.stop()
    bt.check(len(want) >= 10 and got == want,
             f"text scrapes between: the protobuf scrape's {len(got)} native histograms are a fresh exporter's "
             f"({len(want)}; {sum(got.get(k) == v for k, v in want.items())} equal)")
    for case, ex in followers.items():
        ws = writers[case]
        step(ws)
        ex.metrics()  # native cells behind from here
        before = native_of(ex) if case == "caught up" else None
        requests = h.total(ex.samples(), "billing_requests_total")
        ws[0].kill()
        ws[0].wait()
        os.unlink(paths[case][0])
        after, text = native_of(ex), ex.samples()
        if case == "behind":
            bt.check(len(got) >= 10 and not after, "a segment removed while its native cells were behind: its "
                     f"label sets served without native buckets ({len(after)} native histograms)")
        else:
            bt.check(len(before) >= 10 and after == before, "a segment removed once caught up: its native buckets "
                     f"kept ({len(before)} native histograms before, {sum(after.get(k) == v for k, v in before.items())}"
                     " equal after)")
        bt.check(h.total(text, "billing_requests_total") == requests > 0,
                 f"{case}: the removed segment's requests kept ({requests})")
        ws[1].stdin.close()
        ws[1].wait(timeout=30)
        ex.stop()

    # A writer with native buckets off: its label sets are served with
    # their classic buckets alone, never with empty native ones.
    d = os.path.join(base, "native off")
    p = st.run(["full", "2"], {"BILLING_STATS_DIR": d, "BILLING_STATS_NATIVE": "off"})
    ex = h.Exporter(exe, "--stats-dir", d)
    exporters.append(ex)
    off, requests = native_of(ex), h.total(ex.samples(), "billing_requests_total")
    bt.check(p.returncode == 0 and not off and requests > 0,
             f"BILLING_STATS_NATIVE=off: {requests:.0f} requests served classic only ({len(off)} native histograms)")
    ex.stop()

    # --- billingd with stats under billing-load ---------------------------------
    os.environ["BILLING_STATS_DIR"] = os.path.join(base, "billingd")
    billingd = Billingd(billingd_exe, "--gateway-latency-ms", "0.5", "--decline-rate", "0.15", "--threads", "4")
    try:
        ex = h.Exporter(exe, "--pid", str(billingd.pid), "--source", "stats")
        exporters.append(ex)
        bt.check("0 probe attachments on 0 target(s), 1 stats target(s)" in ex.output(),
                 "--pid --source stats: served from the segment, no BPF")
        rc, load, err = run_load(load_exe, billingd.url, "--duration", "5", "--concurrency", "6",
                                 "--invalid-rate", "0.08", "--refund-rate", "0.4", "--seed", "7")
        s = ex.samples()
        rows = billingd.counts()
        bt.check(rc == 0 and load["transport_errors"] == 0 and load["unexpected"] == 0,
                 f"billing-load ran clean (exit {rc})")
        bt.check(load["invoices_created"] > 100 and load["payments_declined"] > 10, "a real mix")
        for what, got, client, db in [
                ("invoices", h.total(s, "billing_invoices_total"), load["invoices_created"], rows["invoices"]),
                ("payments approved", pay_total(s, outcome="approved"), load["payments_approved"], rows["approved"]),
                ("payments declined", pay_total(s, outcome="declined"), load["payments_declined"], rows["declined"]),
                ("refunds", h.total(s, "billing_refunds_total"), load["refunds"], rows["refunds"])]:
            bt.check(got == client == db, f"{what}: stats {got} == billing-load {client} == rows {db}")
        bt.check(h.total(s, "billing_requests_total") == load["responses"],
                 f"requests: stats {h.total(s, 'billing_requests_total')} == responses {load['responses']}")
        bt.check(h.total(s, "billing_request_duration_seconds_count") == load["responses"],
                 "every request's duration observed (the timing helpers clock while the stats count)")
        bt.check(h.total(s, "billing_exporter_target_up", target=f"pid:{billingd.pid}") == 1, "target_up 1 while it runs")
        billingd.proc.send_signal(signal.SIGKILL)
        billingd.proc.wait(timeout=60)
        s2 = ex.samples()
        bt.check(h.total(s2, "billing_exporter_target_up", target=f"pid:{billingd.pid}") == 0,
                 "billingd SIGKILLed: /metrics still serves, target_up 0")
        bt.check(h.total(s2, "billing_requests_total") == h.total(s, "billing_requests_total"),
                 "... and its counts stay")
        rc, _ = ex.stop()
        bt.check(rc == 0, "exporter exits 0 on SIGTERM")
    finally:
        billingd.cleanup()
finally:
    for ex in exporters:
        if ex.proc.poll() is None:
            ex.stop()
    shutil.rmtree(base, ignore_errors=True)
bt.finish()

"""billing-probes top against known batches (tests/tool/top_workload.c).

--once: one interval's figures exact against the batches fired in it
(PID and --stats-dir), zeros for an idle interval, a target that exits
refused, bad targets refused in one line; a directory without a running
writer's segment (empty, missing, or only an exited process's) refused in
one line, exit 2, where zeros would read as an idle service.  A team's
own probe (a segment of another billing.d) shown by its metric's change.
The slow count per handler:
payment.authorize's over 100 ms by BILLING_STATS_SLOW (5 a batch), over
billing.d's 250 ms without it (1 a batch) and with the trails off, two
segments of each summed by --stats-dir, and as many as the trails
`billing-probes slow` prints; unknown for a segment without trails.
`slow PID` reads only the trails: a segment whose metrics part top
refuses still shows them.  A real terminal (tmux): the
screen shows the figures, p pauses (the screen stops changing while the
counts grow), a target that exits is shown as gone, a directory that
empties is said to have no writer while top keeps watching it, q quits
with exit 0 and the terminal restored.  No root needed by top; no tracer."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import TOOL, check, finish, run, skip  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stats"))
import statstest as st  # noqa: E402  (a segment as another billing.d's writer lays it out)

WORKLOAD = os.environ.get("BP_TOP_WORKLOAD", "")
if not WORKLOAD:
    skip("no top_workload in this build (no stats writer)")
if not shutil.which("tmux") and os.environ.get("CI") != "true":
    skip("no tmux (apt-get install tmux)")

# What one batch fires (top_workload.c)
BATCH = {"invoices": 30, "payments": 100, "refunds": 10, "errors": 20}
HANDLERS = {"payment.authorize": (100, "<=5ms", "<=100ms", "<=250ms"),
            "invoice.create": (30, "<=0.5ms", "<=0.5ms", "<=0.5ms"),
            "refund.create": (5, "-", "-", "-")}
# Slow requests of one batch: payment.authorize's 4 of 200 ms and 1 of 700
# ms over a 100 ms override, the 700 ms one over billing.d's 250 ms; none
# of invoice.create's (0.4 ms, billing.d's 250 ms); refund.create's are
# not timed ("-")
OVERRIDE = "payment.authorize=100ms"
# lib/stats_segment.h: the header's trail_offset, after map_cells[]
TRAIL_OFFSET = struct.calcsize("<8sIIQQIIQIIIIQQQQQQQII") + 32 * 4 + 32 * 4 * 4 + 32 * 8 + 32 * 4
SLOW = {OVERRIDE: 5, None: 1, "off": 1}  # off: no trails, billing.d's thresholds still judge
APPROVED = "80.0%"


class Workload:
    def __init__(self, stats_dir, prefix=(), slow=OVERRIDE):
        env = dict(os.environ)
        env.pop("BILLING_STATS_DIR", None)
        env.pop("BILLING_STATS_SLOW", None)
        if stats_dir:
            env["BILLING_STATS_DIR"] = stats_dir
        if slow:
            env["BILLING_STATS_SLOW"] = slow
        self.slow = SLOW[slow]
        self.batches = 1
        self.p = subprocess.Popen(list(prefix) + [WORKLOAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.out = bt.Lines(self.p.stdout)
        self.segment = self.out.wait_for(lambda s: s.startswith("segment "), "the segment line").split()[1]
        self.out.wait_for(lambda s: s == "ready", "ready")

    def batch(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        self.out.wait_for(lambda s: s == "done", "a batch done")
        self.batches += 1

    def end(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def parse(text):
    """The --once lines as {name: fields}."""
    return {line.split()[0]: line.split()[1:] for line in text.splitlines() if line and not line.startswith("#")}


def once(args, batches, w, prefix=(), also=()):
    """top --once ARGS with `batches` batches fired inside its interval, on
    w and on the workloads `also`."""
    p = subprocess.Popen(list(prefix) + [TOOL, "top", "--once", "--interval", "2"] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    for _ in range(batches):
        for each in (w,) + tuple(also):
            each.batch()
    out, err = p.communicate(timeout=60)
    return p.returncode, first + out, err


def check_figures(label, rc, out, err, n, slow=SLOW[OVERRIDE], k=1):
    """One interval of n batches on k workloads, `slow` payment.authorize
    requests a batch over their thresholds (summed over the workloads)."""
    check(rc == 0, "%s: exit 0 (rc=%d, %r)" % (label, rc, err))
    f = parse(out)
    seconds = float(f.get("interval", ["0"])[0])
    check(seconds >= 2.0, "%s: the interval lasts its 2 s (%.3f)" % (label, seconds))
    for name, count in BATCH.items():
        count *= k
        row = f.get(name, [])
        check(row[:1] == [str(count * n)], "%s: %s %d in the interval (%r)" % (label, name, count * n, row))
        want = "%.2f/s" % (count * n / seconds) if seconds else ""
        check(row[1:2] == [want], "%s: %s rate %s (%r)" % (label, name, want, row))
    check(f.get("payments", [])[2:4] == (["approved", APPROVED] if n else ["approved", "-"]),
          "%s: payments approved %s (%r)" % (label, APPROVED if n else "-", f.get("payments")))
    check(f.get("handler", [])[:6] == ["requests", "req/s", "slow", "slow/s", "p50", "p95"],
          "%s: the handlers' columns named (%r)" % (label, f.get("handler")))
    for h, (count, p50, p95, p99) in HANDLERS.items():
        count *= k
        row = f.get(h, [])
        slow_n = {"payment.authorize": slow, "invoice.create": 0}.get(h, 0) * n
        slow_cols = ["-", "-"] if p50 == "-" or not n else [str(slow_n), "%.2f" % (slow_n / seconds) if seconds else ""]
        want = [str(count * n), "%.2f" % (count * n / seconds) if seconds else ""] + slow_cols + (
            [p50, p95, p99] if n else ["-", "-", "-"])
        check(row == want, "%s: handler %s %r (%r)" % (label, h, want, row))


def trail_counts(args, prefix=()):
    """{handler: trails} as `billing-probes slow ARGS` prints them, with
    the thresholds they were judged by."""
    p = subprocess.run(list(prefix) + [TOOL, "slow"] + args, capture_output=True, text=True, timeout=60)
    found = {}
    for m in re.finditer(r"^SLOW REQUEST \d+ (\S+)  [\d.]+ ms > ([\d.]+) ms", p.stdout, re.M):
        found[(m.group(1), m.group(2))] = found.get((m.group(1), m.group(2)), 0) + 1
    return p.returncode, found, p.stderr


tmp = tempfile.mkdtemp(prefix="bp-top-")
os.chmod(tmp, 0o700)
w = Workload(tmp)
try:
    # --once, by PID and by directory: exact per interval
    check_figures("top PID --once, one batch", *once([str(w.p.pid)], 1, w), 1)
    check_figures("top PID --once, three batches", *once([str(w.p.pid)], 3, w), 3)
    check_figures("top PID --once, idle", *once([str(w.p.pid)], 0, w), 0)
    check_figures("top --stats-dir --once, two batches", *once(["--stats-dir", tmp], 2, w), 2)

    # the slow count agrees with the trails: every slow request of w kept one
    rc, got, err = trail_counts([str(w.p.pid)])
    check(rc == 0 and got == {("payment.authorize", "100.000"): w.slow * w.batches},
          "slow PID: %d trails of payment.authorize over 100 ms, as top counted them (%r %r)"
          % (w.slow * w.batches, got, err))

    # two segments, each judged by its own thresholds, summed
    other = Workload(tmp, slow=None)
    check_figures("top --stats-dir --once, two segments of other thresholds",
                  *once(["--stats-dir", tmp], 1, w, also=[other]), 1, SLOW[OVERRIDE] + SLOW[None], 2)
    other.end()
    os.unlink(other.segment)

    # BILLING_STATS_SLOW=off: no trails kept, slow still counted by billing.d's
    off = Workload(tmp, slow="off")
    check_figures("top PID --once, BILLING_STATS_SLOW=off", *once([str(off.p.pid)], 1, off), 1, SLOW["off"])
    rc, got, err = trail_counts([str(off.p.pid)])
    check(rc == 0 and got == {}, "BILLING_STATS_SLOW=off: no trails (%d %r %r)" % (rc, got, err))
    off.end()
    os.unlink(off.segment)

    # a segment that keeps no trails (trail_offset 0) publishes no
    # thresholds: its slow counts are unknown, not 0
    bare = tempfile.mkdtemp(prefix="bp-top-bare-")
    data = bytearray(open(w.segment, "rb").read())
    struct.pack_into("<Q", data, TRAIL_OFFSET, 0)
    with open(os.path.join(bare, "1.stats"), "wb") as f:
        f.write(data)
    os.chmod(os.path.join(bare, "1.stats"), 0o600)
    rc, out, err = run(["top", "--once", "--interval", "0.1", "--stats-dir", bare])
    f = parse(out)
    check(rc == 0 and f.get("payment.authorize", [])[2:4] == ["unknown", "-"],
          "a segment without trails: slow unknown (%d %r %r)" % (rc, f.get("payment.authorize"), err))
    # a threshold between bounds (no writer publishes one): refused
    data = bytearray(open(w.segment, "rb").read())
    ring = struct.unpack_from("<Q", data, TRAIL_OFFSET)[0]
    struct.pack_into("<Q", data, ring + 24, 200000000)  # the ring's slow_default_ns
    with open(os.path.join(bare, "1.stats"), "wb") as f:
        f.write(data)
    rc, out, err = run(["top", "--once", "--interval", "0.1", "--stats-dir", bare])
    check(rc == 2 and "no bound" in err and "invoices" not in out and len(err.splitlines()) == 1,
          "a published threshold that is no bucket bound: refused in one line (%d %r)" % (rc, err))
    shutil.rmtree(bare)

    # a team's own probe feeding a metric (coupon-apply, its counter
    # billing_coupons_applied_total), in a segment as a running writer of
    # that billing.d lays it out: top reads it from the segment's
    # description and shows its change in the interval, beside the other
    # metrics its summary lines do not show, and not those they do
    team = tempfile.mkdtemp(prefix="bp-top-team-")
    os.chmod(team, 0o700)
    team_ms = st.billing_d.parse(st.variant_provider(team)).metrics
    team_rows = st.sample_rows(team_ms, 3)
    seg_path = os.path.join(team, "1.stats")

    def team_segment(rows, name):
        """The segment's path, written aside (no .stats: not read) to be put in place at once."""
        path = os.path.join(team, name)
        st.write_segment(path, team_ms, rows)
        with open(path, "r+b") as f:  # one running writer's (write_segment writes an exited one's, by path)
            f.seek(16)  # struct bs_header's generation, then size, pid and state
            f.write(struct.pack("<Q", st.fnv1a(seg_path.encode()) | 1))
            f.seek(36)
            f.write(struct.pack("<I", 1))
        os.chmod(path, 0o600)
        return path

    more = {k: [(labels, [cells[0] + 7 * (i + 1)] + cells[1:]) for i, (labels, cells) in enumerate(v)]
            if k == "coupon__apply" else v for k, v in team_rows.items()}
    later = team_segment(more, "later")
    os.replace(team_segment(team_rows, "now"), seg_path)
    p = subprocess.Popen([TOOL, "top", "--once", "--interval", "2", "--stats-dir", team], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    os.replace(later, seg_path)  # the same writer, 42 coupons later
    out, err = p.communicate(timeout=60)
    f = parse(first + out)
    seconds = float(f.get("interval", ["0"])[0])
    check(p.returncode == 0 and f.get("billing_coupons_applied_total") == ["42", "%.2f/s" % (42 / seconds)],
          "a team's own probe: its counter's change shown, 42 in the interval (%d %r %r)"
          % (p.returncode, f.get("billing_coupons_applied_total"), err))
    check(f.get("billing_db_query_duration_seconds", [])[:1] == ["0"] and "billing_payments_total" not in f,
          "... beside the other metrics the summary does not show (a histogram's observations), not those it does")
    # beside a segment of a billing.d where the same name is another
    # metric (a sum of durations, not a count): not summed, said
    other_d = os.path.join(team, "other")
    os.mkdir(other_d)
    text = open(st.variant_provider(other_d)).read()
    counter = "@@counter billing_transactions_total count {"
    check(counter in text, "billing.d counts transactions (precondition)")
    with open(os.path.join(other_d, "billing.d"), "w") as out_d:
        out_d.write(text.replace(counter, "@@counter billing_transactions_total sum(duration_ns) {"))
    other_ms = st.billing_d.parse(os.path.join(other_d, "billing.d")).metrics
    st.write_segment(os.path.join(team, "2.stats"), other_ms, st.sample_rows(other_ms, 4))
    with open(os.path.join(team, "2.stats"), "r+b") as seg:
        seg.seek(36)
        seg.write(struct.pack("<I", 1))
    os.chmod(os.path.join(team, "2.stats"), 0o600)
    rc, out, err = run(["top", "--once", "--interval", "0.1", "--stats-dir", team])
    row = " ".join(parse(out).get("billing_transactions_total", []))
    check(rc == 0 and row.startswith("- - ") and "otherwise" in row and parse(out).get("billing_coupons_applied_total"),
          "a name two segments describe as different metrics: not summed, said (%d %r %r)" % (rc, row, err))
    shutil.rmtree(team)

    # no root: a service user's process, read by that user from its own
    # /dev/shm/billing-stats-UID (as root, a user of its own; else ourselves)
    prefix = bt.system_user("bp-top-service")[2] if os.geteuid() == 0 else []
    svc = Workload(None, prefix, slow=None)
    check_figures("top PID --once as the service's own user, not root, billing.d's thresholds",
                  *once([str(svc.p.pid)], 1, svc, prefix), 1, SLOW[None])
    rc, got, err = trail_counts([str(svc.p.pid)], prefix)
    check(rc == 0 and got == {("payment.authorize", "250.000"): svc.batches},
          "slow PID as the service's user: one trail a batch over billing.d's 250 ms (%r %r)" % (got, err))
    svc.end()

    # refusals: one stderr line, exit 2, no figures
    rc, out, err = run(["top", "--once", "999999999"])
    check(rc == 2 and "invoices" not in out and len(err.splitlines()) == 1, "no such PID refused (%d %r)" % (rc, err))
    plain = subprocess.Popen(["sleep", "30"])
    rc, out, err = run(["top", "--once", str(plain.pid)])
    plain.kill()
    plain.wait()
    check(rc == 2 and "maps no stats segment" in err and len(err.splitlines()) == 1,
          "a process that maps no segment refused, as such (%d %r)" % (rc, err))
    # a directory without a running writer's segment: refused in one line,
    # no zeros that read as an idle service (a typo, a service not started
    # or stopped); a directory that does not exist likewise
    empty = tempfile.mkdtemp(prefix="bp-top-empty-")
    os.chmod(empty, 0o700)
    for label, where, why in (("an empty directory", empty, "no stats segment"),
                              ("a directory that does not exist", os.path.join(empty, "typo"), "No such file")):
        rc, out, err = run(["top", "--once", "--interval", "0.1", "--stats-dir", where])
        check(rc == 2 and "invoices" not in out and len(err.splitlines()) == 1 and where in err and why in err,
              "%s: refused in one line naming it (%r), exit 2, no figures (%d %r %r)" % (label, why, rc, out, err))
    stopped = Workload(empty)
    stopped.end()
    rc, out, err = run(["top", "--once", "--interval", "0.1", "--stats-dir", empty])
    check(rc == 2 and "invoices" not in out and len(err.splitlines()) == 1 and "exited" in err,
          "a directory whose one segment is of an exited process: refused in one line (%d %r)" % (rc, err))
    shutil.rmtree(empty)

    open_dir = tempfile.mkdtemp(prefix="bp-top-open-")
    os.chmod(open_dir, 0o777)
    rc, out, err = run(["top", "--once", "--stats-dir", open_dir])
    check(rc == 2 and "writable by others" in err and len(err.splitlines()) == 1,
          "a directory anyone may write refused (%d %r)" % (rc, err))
    os.rmdir(open_dir)
    junk = os.path.join(tmp, "1.stats")
    with open(junk, "wb") as f:
        f.write(b"not a segment" * 100)
    os.chmod(junk, 0o600)
    rc, out, err = run(["top", "--once", "--stats-dir", tmp])
    check(rc == 2 and "1.stats" in err and "invoices" not in out and len(err.splitlines()) == 1,
          "a segment that cannot be read refused, no figures (%d %r)" % (rc, err))
    os.unlink(junk)

    # a segment replaced in the interval (its process gone, another in its
    # place): the counters cannot be told apart, no figures
    p = subprocess.Popen([TOOL, "top", "--once", "--interval", "2", "--stats-dir", tmp], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    w.end()
    os.unlink(w.segment)
    w = Workload(tmp)
    out, err = p.communicate(timeout=60)
    check(p.returncode == 2 and "segments changed" in err and "invoices" not in out,
          "a segment replaced in the interval: refused, no figures (%d %r)" % (p.returncode, err))

    # a target that exits during the interval: refused, no figures
    gone = Workload(tmp)
    p = subprocess.Popen([TOOL, "top", "--once", "--interval", "2", str(gone.p.pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    gone.end()
    out, err = p.communicate(timeout=60)
    check(p.returncode == 1 and "exited" in err and "invoices" not in out,
          "a process that exits in the interval: exit 1, no figures (%d %r %r)" % (p.returncode, out, err))

    # slow PID reads the trails, not the metrics: a segment whose metrics
    # part is refused (rows_per_map 0, the header's byte 56) keeps its trails
    broken = Workload(tmp)
    with open(broken.segment, "r+b") as f:
        f.seek(56)
        f.write(struct.pack("<I", 0))
    rc, out, err = run(["top", "--once", str(broken.p.pid)])
    check(rc == 2 and "layout differs" in err, "top refuses the segment's metrics (%d %r)" % (rc, err))
    rc, got, err = trail_counts([str(broken.p.pid)])
    check(rc == 0 and got == {("payment.authorize", "100.000"): broken.slow} and not err,
          "slow PID prints its trails all the same (%d %r %r)" % (rc, got, err))
    broken.end()
    os.unlink(broken.segment)
finally:
    pass

# A real terminal
if shutil.which("tmux"):
    sock = os.path.join(tmp, "tmux.sock")
    done_file = os.path.join(tmp, "exit")

    def tmux(*args):
        return subprocess.run(["tmux", "-S", sock] + list(args), capture_output=True, text=True, timeout=30).stdout

    def screen():
        return tmux("capture-pane", "-p", "-t", "top")

    def figures_shown(s, n):
        return re.search(r"^payments %d [0-9.]+/s approved 80\.0%%" % (100 * n), s, re.M) and \
            re.search(r"^payment\.authorize %d [0-9.]+ %d [0-9.]+ <=5ms <=100ms <=250ms" % (100 * n, 5 * n), s, re.M) and \
            re.search(r"^invoice\.create %d [0-9.]+ 0 0\.00 " % (30 * n), s, re.M)

    tmux("new-session", "-d", "-s", "top", "-x", "120", "-y", "40", "sh")
    try:
        tmux("send-keys", "-t", "top", "%s top --interval 1 %d; echo exit=$? > %s" % (TOOL, w.p.pid, done_file),
             "Enter")
        bt.wait_for("the live screen", lambda: "live" in screen() or "first interval" in screen(), timeout=30)
        # a batch every half second until an interval shows exactly... the
        # batches of one interval are not known here: wait for an interval
        # that holds one batch, firing one per interval
        deadline = time.monotonic() + 40
        shown = None
        while time.monotonic() < deadline and not shown:
            w.batch()
            try:
                shown = bt.wait_for("figures", lambda: figures_shown(screen(), 1), timeout=2.5, interval=0.1)
            except RuntimeError:
                pass
        check(bool(shown), "the screen shows an interval's figures: payments, approval, handler slow counts and percentiles")
        check(tmux("display", "-p", "-t", "top", "#{alternate_on}").strip() == "1", "top runs on the alternate screen")

        tmux("send-keys", "-t", "top", "p")
        bt.wait_for("PAUSED", lambda: "PAUSED" in screen(), timeout=10, interval=0.1)
        paused = screen()
        for _ in range(3):
            w.batch()
        # three intervals' time: the screen must not change while counts grow
        end = time.monotonic() + 3.5
        same = True
        while time.monotonic() < end:
            same = same and screen() == paused
            time.sleep(0.2)
        check(same and "PAUSED" in paused, "paused: the screen stays as it was while 300 payments are fired")
        tmux("send-keys", "-t", "top", " ")
        bt.wait_for("resumed", lambda: "PAUSED" not in screen(), timeout=10, interval=0.1)
        check(True, "space resumes")

        gone = Workload(tmp)
        tmux("send-keys", "-t", "top", "q")
        bt.wait_for("top quits", lambda: os.path.exists(done_file) and open(done_file).read().strip(),
                    timeout=15, interval=0.1)
        check(open(done_file).read().strip() == "exit=0", "q quits with exit 0 (%r)" % open(done_file).read())
        check(tmux("display", "-p", "-t", "top", "#{alternate_on}").strip() == "0",
              "after q the normal screen is back")
        tmux("send-keys", "-t", "top", "stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' > %s.stty" % done_file,
             "Enter")
        bt.wait_for("stty", lambda: os.path.exists(done_file + ".stty") and open(done_file + ".stty").read(),
                    timeout=15, interval=0.1)
        check(open(done_file + ".stty").read().split() == ["icanon", "echo"],
              "the terminal is restored: canonical mode, echo (%r)" % open(done_file + ".stty").read())

        # a target that exits is shown as gone
        os.unlink(done_file)
        tmux("send-keys", "-t", "top", "%s top --interval 1 %d; echo exit=$? > %s" % (TOOL, gone.p.pid, done_file),
             "Enter")
        bt.wait_for("the live screen", lambda: "first interval" in screen() or "live" in screen(), timeout=30)
        gone.end()
        bt.wait_for("GONE", lambda: "GONE" in screen(), timeout=15, interval=0.1)
        s = screen()
        check("GONE" in s and not re.search(r"^invoices ", s, re.M), "a process that exits is shown GONE, no figures")
        tmux("send-keys", "-t", "top", "q")
        bt.wait_for("top quits", lambda: os.path.exists(done_file) and open(done_file).read().strip(),
                    timeout=15, interval=0.1)
        check(open(done_file).read().strip() == "exit=0", "q quits a gone target's view with exit 0")

        # a directory that empties while top watches it: said on the
        # screen, top stays, and shows figures again once a writer is back
        watched = tempfile.mkdtemp(prefix="bp-top-watched-")
        os.chmod(watched, 0o700)
        first_w = Workload(watched)
        os.unlink(done_file)
        tmux("send-keys", "-t", "top", "%s top --interval 1 --stats-dir %s; echo exit=$? > %s"
             % (TOOL, watched, done_file), "Enter")
        bt.wait_for("the live screen", lambda: "live" in screen(), timeout=30, interval=0.1)
        first_w.end()
        os.unlink(first_w.segment)
        bt.wait_for("NO WRITER", lambda: "NO WRITER" in screen(), timeout=15, interval=0.1)
        time.sleep(2.5)  # two more intervals: still said, still running
        s = screen()
        check("NO WRITER" in s and "no stats segment" in s and not re.search(r"^invoices ", s, re.M)
              and not os.path.exists(done_file),
              "the directory emptied: top says so, shows no figures and keeps running")
        back = Workload(watched)
        bt.wait_for("figures again", lambda: "live" in screen() and "NO WRITER" not in screen(), timeout=15,
                    interval=0.1)
        check(re.search(r"^invoices ", screen(), re.M) is not None, "a writer back: figures again")
        tmux("send-keys", "-t", "top", "q")
        bt.wait_for("top quits", lambda: os.path.exists(done_file) and open(done_file).read().strip(),
                    timeout=15, interval=0.1)
        check(open(done_file).read().strip() == "exit=0", "q quits the watched directory's view with exit 0")
        back.end()
        shutil.rmtree(watched, ignore_errors=True)
    finally:
        tmux("kill-server")

w.end()
shutil.rmtree(tmp, ignore_errors=True)
finish()

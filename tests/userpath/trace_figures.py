"""The shipped bpftrace scripts through the kit's `billing-probes trace`:
running them (Trace), waiting until they count (wait_traced), and each
script's figures twice in one shape -- as its output shows them (shown)
and as the service's books say they must be (want) -- for test_trace.py."""
import json
import os
import re
import signal
import subprocess
import tempfile

from userpathtest import DEADLINE, bt

SCRIPTS = ("tps", "biz_metrics", "amount_dist", "request_latency", "slow_requests", "errors")
# request_latency's and slow_requests' threshold: the schedule's slow requests
# (report.export's 30 ms, invoices and payments of one round in four: 25 ms)
SLOW_MS = 20
# the scripts' arguments: one report at exit (an interval longer than any run), the threshold
SCRIPT_ARGS = {"tps": [], "biz_metrics": ["3600"], "amount_dist": [], "errors": ["3600"],
               "request_latency": [str(SLOW_MS), "3600"], "slow_requests": [str(SLOW_MS)]}


def script_probes(kit, script):
    """The probes (ELF names) an installed script names."""
    path = os.path.join(kit.prefix, "share", "billing-probes", "d-scripts", "bpftrace", script + ".bt")
    return set(re.findall(r"usdt::billing:(\w+)", open(path).read()))


class Trace:
    """`billing-probes trace SCRIPT TARGET... -- ARGS` of the kit, running."""

    def __init__(self, kit, script, target_args, script_args=None):
        self.script, self.target = script, " ".join(target_args)
        self.err = tempfile.TemporaryFile(mode="w+")
        args = SCRIPT_ARGS[script] if script_args is None else script_args
        self.proc = subprocess.Popen([kit.tool, "trace", script, *target_args, "--", *args],
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.lines = bt.Lines(self.proc.stdout, DEADLINE)

    def what(self):
        return "trace %s %s" % (self.script, self.target)

    def stderr(self):
        return bt.written(self.err)

    def started(self):
        """True once the script has printed its "Tracing ..." line (BEGIN:
        every probe attached); False, with why, when it ended instead."""
        try:
            self.lines.wait_for(lambda l: l.startswith("Tracing "), "%s to start" % self.what())
            return True
        except RuntimeError as e:
            bt.check(False, "%s started (exit %s, %s; %s)" % (self.what(), self.proc.poll(),
                                                              self.stderr().strip()[-400:], e))
            return False

    def stop(self):
        """Ctrl-C (trace passes it on; bpftrace prints its END); (exit, output, stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode, "\n".join(self.lines.rest()), self.stderr()


def traced(kit, pid):
    """{ELF probe name: all its sites traced} in PID (billing-probes list)."""
    r = bt.run([kit.tool, "list", str(pid), "--json", "-P", "billing"])
    if r.returncode != 0:
        return {}
    out = {}
    for p in json.loads(r.stdout)["probes"]:
        out[p["name"]] = out.get(p["name"], True) and bool(p["traced"])
    return out


def wait_traced(kit, pids, probes, timeout=DEADLINE):
    """Waits until every probe of PROBES is traced in every PID (its
    semaphore raised: a tracer attached); False after TIMEOUT seconds."""
    try:
        bt.wait_for("semaphores of %s raised in %s" % (sorted(probes), pids),
                    lambda: all(all(traced(kit, pid).get(p) for p in probes) for pid in pids),
                    timeout=timeout, interval=0.1)
        return True
    except RuntimeError:
        return False


# what each script shows, from its output (None: no TOTAL) and from the books

def pow2_bucket(v):
    """The lower bound of the power-of-two bucket of v ("neg" below 0)."""
    return "neg" if v < 0 else 0 if v == 0 else 1 << (v.bit_length() - 1)


def hists(text, name):
    """The twins' histograms, one line per bucket @NAME[KEYS, FROM]: N, as
    {(keys): {bucket lower bound ("neg" for FROM -1): count}}, buckets with
    a count only; a bucket printed twice counts as a wrong figure (None)."""
    out = {}
    for m in re.finditer(r"^@%s\[(.*), (-?\d+)\]: (\d+)$" % name, text, re.M):
        low = "neg" if int(m.group(2)) < 0 else int(m.group(2))
        row = out.setdefault(tuple(m.group(1).split(", ")), {})
        if low in row:
            return None
        if int(m.group(3)):
            row[low] = int(m.group(3))
    return out


def _counter(pairs):
    out = {}
    for k, v in pairs:
        out[k] = out.get(k, 0) + v
    return out


def _dash(s):
    return s or "-"


def _total_part(text):
    return text.split("TOTAL since start", 1)[1] if "TOTAL since start" in text else None


def shown(script, text):
    """What SCRIPT's output says, in the shape want() gives."""
    if script == "tps":
        secs = bt.tps_seconds(text)
        return {"transactions": sum(s[0] for s in secs), "failed": sum(s[1] for s in secs)} if secs else None
    if script == "amount_dist":
        if "Amounts of transactions begun (transaction-start) by" not in text:
            return None
        # stats(): "count N, average A, total S" (bpftrace 0.17, 0.23), "{ .count = N, ... }" (0.27)
        return {"stats": {(c, k): (int(n), int(a), int(t)) for c, k, n, a, t in re.findall(
                    r"^@stats_minor\[(.*), (.*)\]: (?:count |\{ \.count = )(\d+), \.?average =? ?(-?\d+), "
                    r"\.?total =? ?(-?\d+)(?: \})?$", text, re.M)},
                "hist": hists(text, "amount_minor")}
    if script == "slow_requests":
        trails, cur = {}, None
        for line in text.splitlines():
            m = re.match(r"^SLOW REQUEST (\S+) (\S+)$", line)
            if m:
                cur = trails.setdefault(int(m.group(1)) if m.group(1).isdigit() else m.group(1),
                                        (m.group(2), []))[1]
            elif cur is not None and re.match(r"^\s+\+\s*\d+ us\s", line):
                cur.append(" ".join(re.sub(r"^\s+\+\s*\d+ us\s", "", line).split()))
            else:
                cur = None
        return {rid: (h, sorted(ev)) for rid, (h, ev) in trails.items()}
    tot = _total_part(text)
    if tot is None:
        return None
    if script == "errors":
        n = re.search(r"^errors (\d+)$", tot, re.M)
        return {"errors": int(n.group(1)) if n else None,
                "rows": {(c, int(k)): int(v) for c, k, v in re.findall(
                    r"^@errors_total\[(.*), (-?\d+)\]: (\d+)$", tot, re.M)}}
    if script == "biz_metrics":
        inv = re.search(r"^invoices (\d+)$", tot, re.M)
        pay = re.search(r"^payments approved (\d+) declined (\d+)", tot, re.M)
        ref = re.search(r"^refunds (\d+)$", tot, re.M)
        return {"invoices": int(inv.group(1)) if inv else None,
                "approved": int(pay.group(1)) if pay else None, "declined": int(pay.group(2)) if pay else None,
                "refunds": int(ref.group(1)) if ref else None,
                "payments": {(g, int(c)): int(n) for g, c, n in re.findall(
                    r"^@payments_total\[(.*), (-?\d+)\]: (\d+)$", tot, re.M)},
                "amounts": {(c, m): int(n) for c, m, n in re.findall(
                    r"^@amount_minor_total\[(.*), (\w+)\]: (-?\d+)$", tot, re.M)},
                "reasons": {r: int(n) for r, n in re.findall(r"^@refunds_total\[(.*)\]: (\d+)$", tot, re.M)}}
    if script == "request_latency":
        table = tot.split("\nUNMEASURED", 1)[0]
        un = re.search(r"^UNMEASURED \(duration 0, skipped\): (\d+)$", tot, re.M)
        return {"rows": {h: (int(n), int(s)) for h, n, s in re.findall(
                    r"^(\S+)\s+(\d+)\s+(\d+)\s+\d+\.\d\d(?:\s+(?:\d+|-)){3}$", table, re.M)},
                "unmeasured": int(un.group(1)) if un else None,
                "hist": hists(tot, "usecs")}
    raise ValueError(script)


def trail_line(probe, a):
    """An event of a slow request's trail as slow_requests prints it
    (its DETAIL, fields separated by one blank), from the books."""
    us = a[-1] // 1000 if isinstance(a[-1], int) else None
    detail = {
        "request-start": lambda: "handler=%s" % _dash(a[1]),
        "transaction-start": lambda: "tx=%d kind=%s amount=%d %s" % (a[0], _dash(a[1]), a[2], _dash(a[3])),
        "transaction-done": lambda: "tx=%d kind=%s status=%d" % (a[0], _dash(a[1]), a[2]),
        "invoice-create": lambda: "invoice=%d amount=%d %s" % (a[0], a[2], _dash(a[3])),
        "payment-auth": lambda: "amount=%d %s gateway=%s result=%d" % (a[1], _dash(a[2]), _dash(a[3]), a[4]),
        "refund-process": lambda: "amount=%d %s reason=%s" % (a[2], _dash(a[3]), _dash(a[4])),
        "error": lambda: "component=%s code=%d" % (_dash(a[1]), a[2]),
        "db-query-start": lambda: "op=%s" % _dash(a[1]),
        "db-query-done": lambda: "op=%s status=%d duration_us=%d" % (_dash(a[1]), a[2], us),
        "gateway-call-start": lambda: "gateway=%s op=%s" % (_dash(a[1]), _dash(a[2])),
        "gateway-call-done": lambda: "gateway=%s op=%s status=%d duration_us=%d" % (_dash(a[1]), _dash(a[2]), a[3], us),
        "request-done": lambda: "handler=%s status=%d duration_us=%d" % (_dash(a[1]), a[2], us),
    }[probe]
    return probe + " " + detail()


def want(script, books):
    """What SCRIPT must show for the events of BOOKS (every amount and
    duration in its own power-of-two bucket)."""
    if script == "tps":
        done = books.fires("transaction-done")
        return {"transactions": len(done), "failed": sum(1 for f in done if f[2] != 0)}
    if script == "errors":
        err = books.fires("error")
        return {"errors": len(err), "rows": _counter(((_dash(f[1]), f[2]), 1) for f in err)}
    if script == "biz_metrics":
        inv, pay, ref = (books.fires(p) for p in ("invoice-create", "payment-auth", "refund-process"))
        return {"invoices": len(inv), "approved": sum(1 for f in pay if f[4] == 0),
                "declined": sum(1 for f in pay if f[4] != 0), "refunds": len(ref),
                "payments": _counter(((_dash(f[3]), f[4]), 1) for f in pay),
                "amounts": _counter([((_dash(f[3]), "invoices"), f[2]) for f in inv] +
                                    [((_dash(f[2]), "declined" if f[4] else "approved"), f[1]) for f in pay] +
                                    [((_dash(f[3]), "refunds"), f[2]) for f in ref]),
                "reasons": _counter((_dash(f[4]), 1) for f in ref)}
    if script == "amount_dist":
        stats, hist = {}, {}
        for tx, kind, amount, cur in books.fires("transaction-start"):
            key = (_dash(cur), _dash(kind))
            n, total = stats.get(key, (0, 0))
            stats[key] = (n + 1, total + amount)
            b = hist.setdefault(key, {})
            b[pow2_bucket(amount)] = b.get(pow2_bucket(amount), 0) + 1
        # bpftrace's average: 64-bit integer division, truncated toward 0
        return {"stats": {k: (n, (abs(t) // n) * (1 if t >= 0 else -1), t) for k, (n, t) in stats.items()},
                "hist": hist}
    if script == "request_latency":
        done = books.fires("request-done")
        measured = [f for f in done if f[3] != 0]
        hist = {}
        for f in measured:
            b = hist.setdefault((_dash(f[1]),), {})
            b[pow2_bucket(f[3] // 1000)] = b.get(pow2_bucket(f[3] // 1000), 0) + 1
        return {"rows": {h: (n, s) for h, n, s in (
                    (h, sum(1 for f in measured if _dash(f[1]) == h),
                     sum(1 for f in measured if _dash(f[1]) == h and f[3] > SLOW_MS * 1000000))
                    for h in {_dash(f[1]) for f in measured})},
                "unmeasured": len(done) - len(measured), "hist": hist}
    if script == "slow_requests":
        slow = {f[0]: f[1] for f in books.fires("request-done") if f[3] > SLOW_MS * 1000000}
        trails = {rid: (_dash(h), []) for rid, h in slow.items()}
        for probe, rows in books.events.items():
            for _, _, rid, args in rows:
                if rid in trails:
                    trails[rid][1].append(trail_line(probe, args))
        return {rid: (h, sorted(ev)) for rid, (h, ev) in trails.items()}
    raise ValueError(script)

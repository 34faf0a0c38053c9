#!/usr/bin/env python3
"""A stats build's metrics do not change when someone traces.

timed_workload serves N payments timed the README's way (the library's
begin/end helpers, and billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED()) by
hand).  Run once untraced and once with bpftrace attached to every
stats-fed probe, it must leave the same figures in its segment and in
billing-exporter's /metrics: every count, sum and bucket, and for the
durations (real time, never equal twice) every one measured and observed.
In the traced run bpftrace sees the same fires and duration sums the
stats counted.  And the stats alone never fire a USDT site: untraced, a
uprobe on each site of those probes, placed without raising its semaphore,
counts 0 hits, while one on each probe's stats entry point
billing_stats_<probe>() counts every fire (so the uprobes do count)."""
import os
import re
import subprocess
import sys
import tempfile

import statstest as st
from statstest import bt

sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
import exportertest as h  # noqa: E402

N = 720
CLOCKED = "duration_ns"  # the quantity the workload measures with the clock
TIMED = os.environ.get("BS_TIMED_WORKLOAD", "")
EXPORTER = os.environ.get("BX_EXPORTER", "")

if not TIMED or not os.path.exists(TIMED):
    bt.skip("BS_TIMED_WORKLOAD not built (run through meson test)")
st.require_built()
bt.require_tracing()
FED = [f.probe for f in st.METRICS.feeds]


def duration_arg(probe):
    names = [n for n, _, _ in probe.args]
    return names.index(CLOCKED) if CLOCKED in names else None


def bpftrace_program():
    """Per stats-fed probe: fires, and the sum and number of its measured durations."""
    out = []
    for p in FED:
        body = f'@fires["{p.d_name}"] = count();'
        i = duration_arg(p)
        if i is not None:
            body += f' @duration_ns["{p.d_name}"] = sum(arg{i}); @measured["{p.d_name}"] = sum(arg{i} > 0 ? 1 : 0);'
        out.append(f"usdt::billing:{p.d_name} {{ {body} }}")
    return 'BEGIN { printf("attached\\n"); }\n' + "\n".join(out) + "\n"


def bpftrace_maps(text):
    """{map: {probe: value}} from bpftrace's map print at exit."""
    out = {}
    for name, key, value in re.findall(r"^@(\w+)\[([\w-]+)\]: (-?\d+)$", text, re.M):
        out.setdefault(name, {})[key] = int(value)
    return out


class SiteHits:
    """Uprobes made through tracefs without a reference counter, so no
    semaphore rises: one on every USDT site of the stats-fed probes in
    PROGRAM, and one on each probe's stats entry point billing_stats_<probe>()
    (which does run: the counting works).  uprobe_profile counts the hits.
    The kernel refuses a tracer's USDT uprobe (with its semaphore) on a site
    that holds one of these, so they go before anyone traces."""

    def __init__(self, program):
        self.program = program
        self.group = f"bs_traced_untraced_{os.getpid()}"
        self.instance = os.path.join(bt.TRACEFS, "instances", self.group)
        self.events = {}  # event name -> (what, probe d_name, file offset)
        notes, symbols, loads = bt.sdt_notes(program), self.symbols(), self.loads()

        def offset(addr):
            return next(addr - va + off for va, off, size in loads if va <= addr < va + size)

        for p in FED:
            for addr, _ in notes.get(p.d_name, []):
                self.events[f"site{len(self.events)}_{os.getpid()}"] = ("site", p.d_name, offset(addr))
            self.events[f"stats{len(self.events)}_{os.getpid()}"] = (
                "stats", p.d_name, offset(symbols[f"billing_stats_{p.func}"]))

    def symbols(self):
        out = bt.run(["nm", "--defined-only", self.program]).stdout
        return {f[2]: int(f[0], 16) for f in (line.split() for line in out.splitlines()) if len(f) == 3}

    def loads(self):
        """[(vaddr, offset, filesz)] of the program's PT_LOAD segments."""
        out = bt.run(["readelf", "-lW", self.program]).stdout
        return [(int(va, 16), int(off, 16), int(size, 16)) for off, va, size in
                re.findall(r"^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)", out, re.M)]

    def write(self, path, text):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # tracefs refuses a seek
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def __enter__(self):
        events = os.path.join(bt.TRACEFS, "uprobe_events")
        # An instance of our own, so the events' records stay out of the
        # global trace buffer.
        os.mkdir(self.instance)
        try:
            for name, (_, _, offset) in self.events.items():
                self.write(events, f"p:{self.group}/{name} {self.program}:{offset:#x}\n")
            self.write(os.path.join(self.instance, "events", self.group, "enable"), "1")
        except OSError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        """Everything __enter__ made goes, whatever of it was made."""
        try:
            self.write(os.path.join(self.instance, "events", self.group, "enable"), "0")
        except OSError:
            pass
        made = open(os.path.join(bt.TRACEFS, "uprobe_events")).read()
        for name in self.events:
            if f"p:{self.group}/{name} " in made:
                try:
                    self.write(os.path.join(bt.TRACEFS, "uprobe_events"), f"-:{self.group}/{name}\n")
                except OSError as e:
                    print(f"could not delete uprobe {self.group}/{name}: {e}")
        os.rmdir(self.instance)

    def hits(self, what):
        """{probe d_name: hits of its WHAT ("site" or "stats") uprobes}."""
        out = {p.d_name: 0 for p in FED}
        with open(os.path.join(bt.TRACEFS, "uprobe_profile")) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and self.events.get(fields[1], ("",))[0] == what:
                    out[self.events[fields[1]][1]] += int(fields[2])
        return out


def serve(stats_dir, traced):
    """One run of timed_workload N; (its segment path, bpftrace's maps or None)."""
    proc = subprocess.Popen([TIMED, str(N)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=dict(os.environ, BILLING_STATS_DIR=stats_dir), text=True)
    tracer = None
    try:
        lines = bt.Lines(proc.stdout, timeout=120)
        lines.wait_for(lambda l: l == "ready", "timed_workload to start")
        if traced:
            tracer = subprocess.Popen(["bpftrace", "-p", str(proc.pid), "-e", bpftrace_program()],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            tracer_lines = bt.Lines(tracer.stdout, timeout=120)
            try:
                # BEGIN runs once every probe is attached.
                tracer_lines.wait_for(lambda l: l == "attached", "bpftrace to attach")
            except RuntimeError:
                tracer.kill()
                tracer.wait()
                print("bpftrace: " + tracer.stderr.read().strip())
                raise
        proc.stdin.write("go\n")
        proc.stdin.close()
        seg = lines.wait_for(lambda l: l.startswith("segment "), "the workload's segment line")
        bt.check(proc.wait(timeout=120) == 0, f"{'traced' if traced else 'untraced'} run: exit 0")
        maps = None
        if tracer:
            # bpftrace -p leaves when its process does, printing its maps.
            rc = tracer.wait(timeout=120)
            bt.check(rc == 0, f"bpftrace exited {rc}" + (f" ({tracer.stderr.read().strip()[-300:]})" if rc else ""))
            maps = bpftrace_maps("\n".join(tracer_lines.rest()))
            tracer = None
        return seg.split(" ", 2)[2], maps
    finally:
        bt.kill_all(proc, tracer)


def row_cells(seg):
    """{(map, labels, ints): cells} of a segment as the reader gives it."""
    return {(m, tuple(r["labels"]), tuple(r["ints"])): r["cells"] for m, rows in seg["maps"].items() for r in rows}


def series(key):
    """A segment row's map and label values, for messages."""
    m, labels, ints = key
    return f"{m}{{{','.join(l for l in labels if l)}}}{[i for i in ints if i] or ''}"


def compare_segments(untraced, traced):
    a, b = row_cells(untraced), row_cells(traced)
    bt.check(set(a) == set(b), f"the same label sets untraced and traced ({sorted(set(a) ^ set(b))[:4]})")
    exact = clocked = 0
    for key in sorted(set(a) & set(b)):
        ca, cb = a[key], b[key]
        feed = next(f for f in st.METRICS.feeds if f.map_name == key[0])
        layout = st.cells_layout(key[0])
        deterministic = [0]  # the fire count
        for q in feed.quantities:
            first, nbuckets = layout[q]
            if q != CLOCKED:
                deterministic += range(first, first + 2 + nbuckets)
                continue
            deterministic.append(first)  # how many were observed
            clocked += 1
            for run, c in (("untraced", ca), ("traced", cb)):
                bt.check(c[first] == c[0], f"{run}: {series(key)}: every {q} measured: "
                         f"{c[first]} observed of {c[0]} fires")
                bt.check(sum(c[first + 2:first + 2 + nbuckets]) == c[first] and (c[first + 1] > 0) == (c[first] > 0),
                         f"{run}: {series(key)}: {q} buckets sum to the observed, sum {c[first + 1]} > 0")
        same = [ca[i] for i in deterministic] == [cb[i] for i in deterministic]
        exact += same
        bt.check(same, f"{series(key)}: counts, sums and buckets identical untraced and traced "
                 f"({[ca[i] for i in deterministic]} vs {[cb[i] for i in deterministic]})")
    bt.check(clocked >= 4, f"{clocked} timed series compared (request, transaction, payment, db, gateway)")
    return exact


def exporter_samples(stats_dir):
    """{series: value} of every billing_* sample /metrics serves for STATS_DIR."""
    ex = h.Exporter(EXPORTER, "--stats-dir", stats_dir, "--metrics", "all")
    try:
        text = ex.metrics()[1]
    finally:
        ex.stop()
    out = {}
    for line in text.splitlines():
        if line.startswith("billing_") and not line.startswith("billing_exporter_"):
            head, value = line.rsplit(None, 1)
            out[head] = float(value)
    return out


def compare_exposition(untraced, traced):
    """Every billing_* sample alike, but a duration's sum and finite buckets."""
    def deterministic(head):
        name = head.split("{", 1)[0]
        if name.endswith("_seconds_sum"):
            return False
        return not (name.endswith("_seconds_bucket") and 'le="+Inf"' not in head)

    heads = {h for h in untraced if deterministic(h)} | {h for h in traced if deterministic(h)}
    differ = [h for h in sorted(heads) if untraced.get(h) != traced.get(h)]
    bt.check(heads and not differ, f"/metrics: {len(heads)} samples identical untraced and traced "
             f"({[(h, untraced.get(h), traced.get(h)) for h in differ[:4]]})")
    pay = 'billing_payment_auth_duration_seconds_count{gateway="stripe-sim"}'
    bt.check(untraced.get(pay) == traced.get(pay) == N,
             f"/metrics: {pay} {untraced.get(pay)} untraced, {traced.get(pay)} traced, == {N}")


def compare_tracer(seg, maps):
    """The traced run: bpftrace saw what the stats counted."""
    cells = row_cells(seg)
    for feed in st.METRICS.feeds:
        p = feed.probe
        rows = [c for (m, _, _), c in cells.items() if m == feed.map_name]
        fires = sum(c[0] for c in rows)
        bt.check(maps["fires"].get(p.d_name) == fires and fires > 0,
                 f"{p.name}: bpftrace saw {maps['fires'].get(p.d_name)} fires, the stats counted {fires}")
        if CLOCKED in feed.quantities:
            first, _ = st.cells_layout(feed.map_name)[CLOCKED]
            total, observed = sum(c[first + 1] for c in rows), sum(c[first] for c in rows)
            bt.check(maps["duration_ns"].get(p.d_name) == total and maps["measured"].get(p.d_name) == observed,
                     f"{p.name}: bpftrace's duration sum {maps['duration_ns'].get(p.d_name)} ns over "
                     f"{maps['measured'].get(p.d_name)} == the stats' {total} ns over {observed}")


with tempfile.TemporaryDirectory(prefix="billing-traced-untraced-") as tmp:
    dirs = {run: os.path.join(tmp, run) for run in ("untraced", "traced")}
    with SiteHits(TIMED) as sites:
        bt.check(len(sites.events) >= 2 * len(FED), f"{len(sites.events)} uprobes for {len(FED)} stats-fed probes")
        path, _ = serve(dirs["untraced"], traced=False)
        site_hits, stats_hits = sites.hits("site"), sites.hits("stats")
    traced_path, maps = serve(dirs["traced"], traced=True)
    segs = st.dump([path, traced_path])
    if bt.check(all("error" not in s for s in segs), f"both segments read ({[s.get('error') for s in segs]})"):
        fires = {f.probe.d_name: sum(r["cells"][0] for r in segs[0]["maps"][f.map_name]) for f in st.METRICS.feeds}
        bt.check(stats_hits == fires and all(fires.values()),
                 f"untraced: the stats counted every fire, and a uprobe saw each ({stats_hits})")
        bt.check(not any(site_hits.values()), f"untraced: no USDT site of a stats-fed probe ran ({site_hits})")
        exact = compare_segments(*segs)
        print(f"{exact} segment rows identical")
        if bt.check(maps is not None, "traced: bpftrace printed its maps"):
            compare_tracer(segs[1], maps)
    if EXPORTER:
        compare_exposition(exporter_samples(dirs["untraced"]), exporter_samples(dirs["traced"]))
bt.finish()

"""The scripts tests' harness (test_scripts.py runs the cases, found in
cases_*.py): runs a d-scripts/ script under bpftrace or Oracle's DTrace on
scripts-workload and reads what it prints.

How a run goes: the workload starts with --wait-stdin and blocks; the
script is started on it (-p PID; the bpftrace system views take the PID as
an argument); once the script prints its first line (BEGIN runs after every
probe is attached) the harness writes "go", the workload fires its known
sequence, lingers past one interval and exits, which ends the script and
makes it print its totals.  DTrace's tick-N may not fire on an idle CPU in
this VM, so D interval output is checked where it appears and the figures
are asserted on the output at exit.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import billingtest as bt  # noqa: E402

D_SCRIPTS = os.path.join(bt.SOURCE_ROOT, "d-scripts")
BT_SCRIPTS = os.path.join(D_SCRIPTS, "bpftrace")
sys.path.insert(0, D_SCRIPTS)
import function_sites  # noqa: E402  the one transform to the pid provider

READY = re.compile(r"^(Tracing|Sampling)")
TIMEOUT = 90


class Failure(Exception):
    pass


def require(cond, what):
    """Stop the case here with WHAT unless COND (billingtest.check records
    and goes on; a script case cannot go on past a wrong figure)."""
    if not cond:
        raise Failure(what)


class Reader(threading.Thread):
    """Collects a process's stdout lines; signals when one matches."""

    def __init__(self, proc, pattern=None):
        super().__init__(daemon=True)
        self.proc, self.pattern = proc, pattern
        self.lines, self.matched = [], threading.Event()

    def run(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            if self.pattern and self.pattern.search(line):
                self.matched.set()

    def text(self):
        return "\n".join(self.lines)


class Tracer:
    """How one tracer runs one script on one process.  bpftrace: EXE (the
    first on PATH by default); VIA_TRACE, billing-probes: each script run
    as a user runs it on any service, `VIA_TRACE trace SCRIPT -p PID --
    ARGS` (the system views: `-- PID ARGS`), trace given EXE."""

    def __init__(self, kind, workload, tmp, exe=None, via_trace=None):
        self.kind, self.workload, self.tmp = kind, os.path.abspath(workload), tmp
        self.dtrace = kind == "dtrace"
        self.via_trace = via_trace and os.path.abspath(via_trace)
        if self.dtrace:
            self.exe = bt.require_dtrace()
            self.probes = function_sites.probe_names(bt.PROVIDER_D)
        else:
            bt.require_tracing("bpftrace")
            self.exe = os.path.abspath(exe) if exe else bt.require_program("bpftrace", "bpftrace")
        self.version = None if self.dtrace else re.search(
            r"(\d+)\.(\d+)", subprocess.run([self.exe, "--version"], capture_output=True, text=True).stdout)
        self.version = self.version and (int(self.version.group(1)), int(self.version.group(2)))
        if self.via_trace:
            os.environ["BPFTRACE"] = self.exe  # trace takes it from there (an absolute path)
            os.environ["BILLING_PROBES_SCRIPTS"] = BT_SCRIPTS  # a shipped script by its name, as users name it

    def d_script(self, name):
        """NAME.d in its function-site spelling, written once into tmp."""
        dest = os.path.join(self.tmp, name + ".d")
        if not os.path.exists(dest):
            src = os.path.join(D_SCRIPTS, name + ".d")
            with open(dest, "w") as f:
                f.write(function_sites.transform(open(src).read(), self.probes, src))
        return dest

    def dtrace_s(self, name):
        """dtrace [-C] -s NAME.d (its function-site spelling): -C where its
        #! line has it."""
        path = self.d_script(name)
        return [self.exe] + (["-C"] if re.match(r"#![^\n]*-C", open(path).read()) else []) + ["-s", path]

    def argv(self, name, args, pid, pid_as_arg=False):
        """The command that runs script NAME with ARGS on process PID.
        pid_as_arg: the bpftrace twin takes the PID as its first argument."""
        args = [str(a) for a in args]
        if self.dtrace:
            return self.dtrace_s(name) + ["-p", str(pid)] + args
        if self.via_trace:
            # trace reads the process's modules as it starts: a workload
            # pinned to a CPU is `taskset` until it execs the workload
            try:
                bt.wait_for("process %d to be the workload" % pid,
                            lambda: os.path.realpath("/proc/%d/exe" % pid) == self.workload, TIMEOUT, 0.01)
            except RuntimeError as e:
                raise Failure(str(e))
            return [self.via_trace, "trace", name, "-p", str(pid), "--"] + [str(pid)] * pid_as_arg + args
        path = name if name.endswith(".bt") else os.path.join(BT_SCRIPTS, name + ".bt")
        if pid_as_arg:
            return [self.exe, path, str(pid)] + args
        return [self.exe, "-p", str(pid), path] + args

    def interrupt(self, proc, timeout, already_sent=False):
        """Ctrl-C and wait (bpftrace: re-sent if it missed the first; trace
        passes it on once bpftrace can act on it)."""
        if self.via_trace:
            if not already_sent and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                return proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return bt.stop_process(proc, signal.SIGKILL, 10)
        if not self.dtrace:
            return bt.interrupt_bpftrace(proc, timeout, already_sent)
        if already_sent:
            try:
                return proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        return bt.stop_process(proc, signal.SIGINT, timeout)

    def cleanup(self, proc):
        """A dtrace killed before its exit leaves its uprobes behind."""
        if self.dtrace:
            bt.remove_dtrace_uprobes(proc.pid, self.workload)


TRACER = None  # set by main()


def start_workload(mode, extra=(), cpu=None, hold=False):
    """The workload in MODE; cpu: pinned to that CPU (its threads too);
    hold: it lives on after its linger until its stdin is closed."""
    cmd = [TRACER.workload, mode, "--wait-stdin", "--linger-ms", "1600", *(["--hold-stdin"] if hold else []), *extra]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    reader = Reader(proc, re.compile(r"^fired$"))
    reader.start()
    return proc, reader


def process_tree(pid):
    """PID and its descendants, parents first (/proc/PID/task/*/children)."""
    tree, i = [pid], 0
    while i < len(tree):
        for task in os.listdir("/proc/%d/task" % tree[i]) if os.path.isdir("/proc/%d" % tree[i]) else ():
            try:
                tree += [int(c) for c in open("/proc/%d/task/%s/children" % (tree[i], task)).read().split()]
            except OSError:
                pass
        i += 1
    return tree


def signal_tree(pid, sig):
    for p in process_tree(pid):
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def run(mode, scripts, extra=(), stop_early=(), stall_s=0, after_go=None, cpu=None):
    """Runs each (label, script, args, pid_as_arg) of scripts against one
    workload.  stop_early: labels to stop with SIGINT (Ctrl-C) once the
    workload has fired, while it still lives (stack symbols).  stall_s:
    the tracers (each with its children) are stopped (SIGSTOP) from just
    before the workload fires until stall_s seconds after it has fired: a
    tracer's reader starved for seconds, as on a loaded machine.
    after_go(workload, its Reader, {label: tracer process}): called once
    "go" is written, before the workload's stdin is closed (park mode's
    "wake" is written there).  cpu: the workload pinned to that CPU.
    A script is a name in d-scripts or a path to a .bt file.
    Returns {label: stdout text}."""
    wl, wl_reader = start_workload(mode, extra, cpu, hold=bool(stop_early))
    tracers, stopped_at, stalled = {}, set(), []
    try:
        for label, script, args, pid_as_arg in scripts:
            p = subprocess.Popen(TRACER.argv(script, args, wl.pid, pid_as_arg),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            r = Reader(p, READY)
            r.start()
            errs = []
            threading.Thread(target=lambda p=p, e=errs: e.append(p.stderr.read()),
                             daemon=True).start()
            tracers[label] = (p, r, errs)
        deadline = time.monotonic() + TIMEOUT
        for label, (p, r, errs) in tracers.items():
            while not r.matched.wait(0.2):
                if p.poll() is not None or time.monotonic() > deadline:
                    time.sleep(0.2)
                    raise Failure("%s did not start tracing:\n%s\n%s" % (
                        label, r.text(), b"".join(errs).decode(errors="replace")))
        if stall_s:
            stalled = [p.pid for p, _, _ in tracers.values()]
            for pid in stalled:
                signal_tree(pid, signal.SIGSTOP)
        wl.stdin.write(b"go\n")
        if after_go:
            wl.stdin.flush()
            after_go(wl, wl_reader, {label: t[0] for label, t in tracers.items()})
        if stop_early:
            wl.stdin.flush()  # held open until the early ones have printed (below)
        else:
            wl.stdin.close()
        if stall_s:
            require(wl_reader.matched.wait(TIMEOUT), "the workload never fired")
            time.sleep(stall_s)
            for pid in stalled:
                signal_tree(pid, signal.SIGCONT)
            stalled = []
        if stop_early:
            require(wl_reader.matched.wait(TIMEOUT), "the workload never fired")
            time.sleep(0.3)
            for label in stop_early:
                tracers[label][0].send_signal(signal.SIGINT)
                stopped_at.add(label)
            # Their output printed (symbols read) while the workload lives.
            for label in stop_early:
                TRACER.interrupt(tracers[label][0], TIMEOUT, already_sent=True)
            wl.stdin.close()
        require(wl.wait(TIMEOUT) == 0, "the workload failed")
        out = {}
        for label, (p, r, errs) in tracers.items():
            if label in stopped_at:
                TRACER.interrupt(p, TIMEOUT, already_sent=True)
            else:
                try:
                    p.wait(TIMEOUT)
                except subprocess.TimeoutExpired:
                    TRACER.interrupt(p, 30)
            r.join(5)
            out[label] = r.text()
            sys.stdout.write("----- %s output -----\n%s\n" % (label, out[label]))
            err = b"".join(errs).decode(errors="replace").strip()
            if err:
                sys.stdout.write("----- %s stderr -----\n%s\n" % (label, err))
        return out
    finally:
        for pid in stalled:
            signal_tree(pid, signal.SIGCONT)
        for p, _, _ in tracers.values():
            if p.poll() is None:
                p.kill()
                p.wait(10)
            TRACER.cleanup(p)
        if wl.poll() is None:
            wl.kill()


def side_by_side(runs):
    """Each (mode, scripts, keyword arguments) of runs through run(), all at
    once, a workload each: one dict of every run's outputs.  A run that
    fails fails the case with its own reason."""
    out, failures = {}, []

    def one_run(mode, scripts, kw):
        try:
            out.update(run(mode, scripts, **kw))
        except Failure as e:
            failures.append("%s: %s" % ("+".join(s[0] for s in scripts), e))

    threads = [threading.Thread(target=one_run, args=r) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    require(not failures, "; ".join(failures))
    return out


def one(mode, script, *args):
    """Runs one USDT script with ARGS; its output."""
    return run(mode, [(script, script, args, False)])[script]


# --- parsing ------------------------------------------------------------------

def section(text, title_re):
    """Lines after the heading line matching title_re, up to a blank line."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.search(title_re, line):
            body = []
            for line2 in lines[i + 1:]:
                if not line2.strip():
                    break
                body.append(line2)
            return body
    raise Failure("no section matching %r" % title_re)


UNITS = (("E", 1 << 60), ("P", 1 << 50), ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10))


def size_label(v):
    """bpftrace's bucket bound: 1024 -> 1K, 2097152 -> 2M, 2^31 -> 2G."""
    for unit, mult in UNITS:
        if v >= mult and v % mult == 0:
            return "%d%s" % (v // mult, unit)
    return str(v)


def bucket_label(low):
    """bpftrace's label of the power-of-two bucket from LOW: "[2K, 4K)",
    "[0]", "[1]", and "(..., 0)" for the negative values (LOW -1)."""
    if low < 0:
        return "(..., 0)"
    return "[%d]" % low if low < 2 else "[%s, %s)" % (size_label(low), size_label(2 * low))


def hist(text, name):
    """The non-zero rows of a power-of-two histogram, as bpftrace labels
    them: {"[2K, 4K)": 85}.  Reads the bpftrace twins' buckets, one line
    per bucket "@MAP[KEYS, FROM]: N" for NAME "@MAP[KEYS]" (FROM the
    bucket's lower bound, -1 for the negative values; a bucket printed
    twice fails), and D's quantize() printed under the line "NAME:", whose
    negative rows are added up into one row, "(..., 0)"."""
    if not TRACER.dtrace:
        rows = {}
        pattern = r"^%s, (-?\d+)\]: (\d+)$" % re.escape(name[:-1])
        for m in re.finditer(pattern, text, re.M):
            label = bucket_label(int(m.group(1)))
            require(label not in rows, "%s %s printed twice" % (name, label))
            if int(m.group(2)):
                rows[label] = int(m.group(2))
        if rows:
            return rows
        raise Failure("no histogram %s" % name)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == name + ":":
            rows = {}
            for line2 in lines[i + 1:]:
                d = re.match(r"^\s*(-?\d+) \|[@ ]*\s+(\d+)\s*$", line2)  # D quantize
                if d:
                    v, n = int(d.group(1)), int(d.group(2))
                    label = "(..., 0)" if v < 0 else "[%s, %s)" % (size_label(v), size_label(2 * v))
                    n += rows.get(label, 0) if v < 0 else 0
                elif not rows and (not line2.strip() or "Distribution" in line2):
                    continue
                else:
                    break
                if n:
                    rows[label] = n
            return rows
    raise Failure("no histogram %s" % name)


def scalar_map(text, name):
    """@name[a, b]: N lines -> {("a", "b"): N}."""
    out = {}
    for m in re.finditer(r"^%s\[(.*)\]: (-?\d+)$" % re.escape(name), text, re.M):
        out[tuple(k.strip() for k in m.group(1).split(","))] = int(m.group(2))
    return out


def total_table(text, title, ncols):
    """The rows under the column heading (an upper-case first word) of the
    section titled title_re; lines before it (a summary) are skipped."""
    body = section(text, title)
    heads = [i for i, l in enumerate(body) if re.match(r"^[A-Z][A-Z_]+\s", l)]
    require(heads, "no column heading under %r" % title)
    rows = []
    for line in body[heads[0] + 1:]:
        f = line.split()
        require(len(f) == ncols, "bad row %r" % line)
        rows.append(f)
    return rows


def intervals_add_up(sums, total, what):
    """bpftrace: the intervals hold every event once, so they add up to the
    total.  D: tick-N may not fire on an idle CPU, so an interval may be
    missing; each one printed must still fit within the total."""
    if TRACER.dtrace:
        over = {k: v for k, v in sums.items() if k not in total or
                any(a > b for a, b in zip(v if isinstance(v, (tuple, list)) else (v,),
                                          total[k] if isinstance(total[k], (tuple, list))
                                          else (total[k],)))}
        require(not over, "%s: intervals exceed the total: %s" % (what, over))
    else:
        require(sums == total, "%s: intervals do not add up to the total: %s" % (what, sums))


def keyed(lines, name, *types):
    """@NAME[k1, k2]: N lines among LINES -> {(type1(k1), type2(k2)): N},
    in the order printed (a key printed twice fails)."""
    out = {}
    for line in lines:
        m = re.match(r"^%s\[(.*)\]: (-?\d+)$" % re.escape(name), line)
        if m:
            k = tuple(t(v.strip()) for t, v in zip(types, m.group(1).split(",")))
            require(k not in out, "%s%s printed twice" % (name, k))
            out[k[0] if len(k) == 1 else k] = int(m.group(2))
    return out

#!/usr/bin/env python3
"""fork() under tracers: a pre-forked worker fires its probes while traced,
and no process is left with a raised semaphore once the tracer is gone.

usage: test_fork.py PREFORK BILLING_PROBES

Three tracers, one pre-forking program (prefork.c: workers forked before
any tracer, one more forked on demand):
  1. bpftrace -p WORKER: exactly that worker's fires are counted, only its
     semaphore is raised.
  2. bpftrace -p PARENT while the parent forks a new worker: the new worker
     inherits the parent's memory, raised semaphore included; only the
     parent's fires are counted; after detach both are back to zero.
  3. bpftrace by path (usdt:/path/prefork:billing:...) and
  4. perf by path (what a --binary consumer does): every process mapping
     the program, a worker forked during the trace too, has its semaphore
     raised and every fire counted per PID.
After each: `billing-probes list PID --json` reads every semaphore of the
parent and every worker from /proc/PID/mem; all must be 0.
"""
import os
import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "billingd"))
import billingtest as bt  # noqa: E402
from billingdtest import Bpftrace, parse_maps  # noqa: E402

FIRES = 7          # probes per round: an odd count no default would give
TRACEFS_EVENTS = os.path.join(bt.TRACEFS, "uprobe_events")

bt.require_tracing("bpftrace")
perf = bt.require_program("perf", "linux-perf")
# Uprobes by path attach to the file: a copy no other test runs, so every
# process of it is this test's own.
copy_dir = tempfile.mkdtemp(prefix="hardfork-exe-")
prefork_exe, tool = bt.private_copy(sys.argv[1], copy_dir), sys.argv[2]
# perf keeps one build-id cache (~/.debug) for every perf user, keyed by
# build id: a second copy of one build is not cached under its own path,
# and perf probe -x on it fails ("Failed to open cache").  This test's perf
# runs keep a cache of their own.
perf = [perf, "--buildid-dir", os.path.join(copy_dir, "buildid-cache")]


class Prefork:
    """prefork with 2 workers; its stdout read by a thread into a queue."""

    def __init__(self):
        self.proc = subprocess.Popen([prefork_exe, "2", str(FIRES)], stdout=subprocess.PIPE,
                                     text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.parent = self.proc.pid
        self.workers = []
        try:
            # Parent and workers announce themselves in any order.
            for _ in range(3):
                kind, pid = self._expect(r"(parent|worker) (\d+)", group=0).split()
                if kind == "worker":
                    self.workers.append(int(pid))
        except Exception:
            self.proc.kill()
            raise

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def _expect(self, pattern, timeout=10, group=1):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError("prefork did not print /%s/ within %d s" % (pattern, timeout))
            m = re.fullmatch(pattern, line)
            if m:
                return int(m.group(1)) if group == 1 else m.group(0)
            print("prefork: unexpected line %r" % line)

    def fire(self, pid):
        """One round in PID; returns once it has fired."""
        os.kill(pid, signal.SIGUSR1)
        self._expect("fired (%d)" % pid)

    def fork_worker(self):
        os.kill(self.parent, signal.SIGUSR2)
        pid = self._expect(r"worker (\d+)")
        self.workers.append(pid)
        return pid

    def everyone(self):
        return [self.parent] + self.workers

    def stop(self):
        return bt.stop_process(self.proc, timeout=10, group=self.workers)


def semaphores(pid):
    """{probe name: semaphore value} of a live process, via the tool."""
    p = bt.run([tool, "list", str(pid), "--json"])
    if p.returncode != 0:
        raise RuntimeError("billing-probes list %d: %s" % (pid, p.stderr.strip()))
    return {pr["name"]: pr["semaphore_value"] for pr in json.loads(p.stdout)["probes"]
            if pr["semaphore"] not in (None, "0x0", "")}


def check_semaphores(pf, raised, when):
    """Every probe of each process: semaphore > 0 exactly for PIDs in RAISED."""
    for pid in pf.everyone():
        values = semaphores(pid)
        bt.check(len(values) > 0, "%s: pid %d has probes with semaphores" % (when, pid))
        if pid in raised:
            bt.check(all(v > 0 for v in values.values()),
                     "%s: pid %d semaphores raised: %s" % (when, pid, values))
        else:
            bt.check(all(v == 0 for v in values.values()),
                     "%s: pid %d semaphores at 0: %s" % (when, pid, values))


PROGRAM = """BEGIN { printf("READY\\n"); }
usdt::billing:invoice__create { @fires[pid] = count(); @rounds[pid, arg1] = count(); }
"""


def stop_tracer(tracer):
    """SIGINT and wait (harness waits up to 120 s); say how long it took."""
    t0 = time.monotonic()
    rc, out = tracer.stop(timeout=120)
    print("bpftrace exited %.1f s after SIGINT" % (time.monotonic() - t0))
    return rc, out


def fires_by_pid(text):
    return {int(k): v for (name, k), v in parse_maps(text).items() if name == "fires"}


def bpftrace_worker(pf, script):
    worker, other = pf.workers[0], pf.workers[1]
    tracer = Bpftrace(script, worker)
    try:
        check_semaphores(pf, {worker}, "bpftrace -p worker, attached")
        for _ in range(3):
            pf.fire(worker)
        pf.fire(pf.parent)
        pf.fire(other)
    finally:
        rc, out = stop_tracer(tracer)
    print(out)
    bt.check(rc == 0, "bpftrace -p worker exit code 0 (got %s)" % rc)
    bt.check(fires_by_pid(out) == {worker: 3 * FIRES},
             "bpftrace -p worker counted exactly its %d fires: %s" % (3 * FIRES, fires_by_pid(out)))
    check_semaphores(pf, set(), "bpftrace -p worker, detached")


def bpftrace_parent_forks(pf, script):
    tracer = Bpftrace(script, pf.parent)
    try:
        born = pf.fork_worker()
        # The new worker is a copy of the parent's memory: its counter is
        # the parent's raised one, though no consumer is filtered on it.
        check_semaphores(pf, {pf.parent, born}, "bpftrace -p parent, worker forked while traced")
        pf.fire(born)
        pf.fire(pf.parent)
        pf.fire(pf.parent)
    finally:
        rc, out = stop_tracer(tracer)
    print(out)
    bt.check(rc == 0, "bpftrace -p parent exit code 0 (got %s)" % rc)
    bt.check(fires_by_pid(out) == {pf.parent: 2 * FIRES},
             "bpftrace -p parent counted exactly the parent's %d fires: %s"
             % (2 * FIRES, fires_by_pid(out)))
    check_semaphores(pf, set(), "bpftrace -p parent, detached")


def bpftrace_by_path(pf):
    program = tempfile.NamedTemporaryFile("w", prefix="hardfork-", suffix=".bt", delete=False)
    program.write(PROGRAM.replace("usdt::billing:", "usdt:%s:billing:" % os.path.abspath(prefork_exe)))
    program.close()
    tracer = Bpftrace(program.name, None)  # no -p: the uprobe is on the file
    try:
        check_semaphores(pf, set(pf.everyone()), "bpftrace by path, attached")
        born = pf.fork_worker()
        check_semaphores(pf, set(pf.everyone()), "bpftrace by path, worker forked while attached")
        want = {pf.parent: 2, pf.workers[0]: 1, born: 3}
        for pid, rounds in want.items():
            for _ in range(rounds):
                pf.fire(pid)
    finally:
        rc, out = stop_tracer(tracer)
        os.unlink(program.name)
    print(out)
    want = {pid: rounds * FIRES for pid, rounds in want.items()}
    bt.check(rc == 0, "bpftrace by path exit code 0 (got %s)" % rc)
    bt.check(fires_by_pid(out) == want, "bpftrace by path counted every process's fires: got %s,"
             " want %s" % (fires_by_pid(out), want))
    check_semaphores(pf, set(), "bpftrace by path, detached")


def perf_event_line(group):
    """perf's own uprobe definition of the probe, in GROUP.

    perf 6.1 cannot rename an SDT event (`G:E=%sdt_billing:...` is "not
    supported"), and sdt_billing:invoice__create is a global name other
    tests may hold, so perf resolves it in a dry run and the event is
    written under a name of our own, exactly as perf would write it."""
    p = bt.run([*perf, "probe", "-n", "-v", "-x", prefork_exe, "-a", "%sdt_billing:invoice__create"])
    m = re.search(r"^Writing event: p:sdt_billing/(\S+) (.*)$", p.stdout + p.stderr, re.M)
    if not m:
        raise RuntimeError("perf probe -n did not show its event:\n" + p.stdout + p.stderr)
    bt.check(re.search(r":0x[0-9a-f]+\(0x[0-9a-f]+\)", m.group(2)) is not None,
             "perf's event carries the semaphore offset: " + m.group(2))
    return "p:%s/%s %s" % (group, m.group(1), m.group(2)), "%s:%s" % (group, m.group(1))


def write_uprobe_events(line):
    """One line appended to uprobe_events (Python's "a" mode seeks, which
    tracefs refuses)."""
    fd = os.open(TRACEFS_EVENTS, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def enable_perf(record, ctl, ack, timeout=60):
    """Enable a perf record started with -D -1 --control fifo:CTL,ACK and
    wait for its ack; the fifo opens block until perf opens its ends."""
    result = {}

    def handshake():
        try:
            with open(ctl, "w") as c, open(ack) as a:
                c.write("enable\n")
                c.flush()
                result["ack"] = a.readline()
        except OSError as e:
            result["error"] = e

    t = threading.Thread(target=handshake, daemon=True)
    t.start()
    deadline = time.monotonic() + timeout
    while t.is_alive():
        if record.poll() is not None or time.monotonic() > deadline:
            record.kill()
            raise RuntimeError("perf record was not enabled: %s" % record.communicate()[0])
        t.join(0.1)
    if result.get("ack", "").strip() != "ack":
        raise RuntimeError("perf record's control fifo: %r" % result)


def perf_by_path(pf):
    group = "hardfork_%d" % os.getpid()
    line, event = perf_event_line(group)
    tmp = tempfile.mkdtemp(prefix="hardfork-")
    data, ctl, ack = (os.path.join(tmp, n) for n in ("perf.data", "ctl", "ack"))
    os.mkfifo(ctl)
    os.mkfifo(ack)
    record = None
    try:
        write_uprobe_events(line)
        # The semaphores rise when perf opens the event, but perf -a records
        # only once it has enabled it, after describing every process on
        # the host (slow on a busy machine: fires in between were lost).
        # So it starts disabled and is enabled through its control fifo;
        # its "ack" means recording.
        record = subprocess.Popen([*perf, "record", "-q", "-a", "-e", event, "-o", data, "-D", "-1",
                                   "--control", "fifo:%s,%s" % (ctl, ack)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        enable_perf(record, ctl, ack)
        check_semaphores(pf, set(pf.everyone()), "perf by path, recording")
        born = pf.fork_worker()
        check_semaphores(pf, set(pf.everyone()), "perf by path, worker forked while recording")
        want = {pf.parent: 1, pf.workers[0]: 2, pf.workers[1]: 1, born: 3}
        for pid, rounds in want.items():
            for _ in range(rounds):
                pf.fire(pid)
        time.sleep(0.5)
        record.send_signal(signal.SIGINT)
        out = record.communicate(timeout=60)[0]
        record = None
        script = bt.run([*perf, "script", "-i", data, "-F", "pid,event,trace"], timeout=120)
        got, wrong_args = {}, []
        for row in script.stdout.splitlines():
            fields = row.split()
            if len(fields) >= 2 and fields[1].rstrip(":") == event:
                pid = int(fields[0])
                got[pid] = got.get(pid, 0) + 1
                args = dict(f.split("=", 1) for f in fields[2:] if "=" in f)
                # invoice-create(PID, round, 1250, "EUR"): the string is an address
                if int(args.get("arg1", "-1"), 0) != pid or int(args.get("arg3", "-1"), 0) != 1250:
                    wrong_args.append(row)
        bt.check(not wrong_args, "perf read arg1 == the firing PID and arg3 == 1250 in every"
                 " record (%d wrong: %s)" % (len(wrong_args), wrong_args[:3]))
        want = {pid: rounds * FIRES for pid, rounds in want.items()}
        bt.check(got == want, "perf by path counted every process's fires: got %s, want %s"
                 % (got, want))
        if got != want:
            print(out, script.stdout[-2000:], script.stderr[-2000:])
        check_semaphores(pf, set(), "perf by path, recording stopped")
    finally:
        if record is not None:
            record.kill()
            record.wait()
        try:
            write_uprobe_events("-:" + event.replace(":", "/"))
        except OSError as e:
            print("could not delete %s: %s" % (event, e))
        shutil.rmtree(tmp, ignore_errors=True)
    bt.check(group not in open(TRACEFS_EVENTS).read(), "perf event %s deleted" % event)


script = tempfile.NamedTemporaryFile("w", prefix="hardfork-", suffix=".bt", delete=False)
script.write(PROGRAM)
script.close()
pf = Prefork()
try:
    check_semaphores(pf, set(), "untraced")
    bpftrace_worker(pf, script.name)
    bpftrace_parent_forks(pf, script.name)
    bpftrace_by_path(pf)
    perf_by_path(pf)
    check_semaphores(pf, set(), "at the end")
finally:
    rc = pf.stop()
    os.unlink(script.name)
    shutil.rmtree(copy_dir, ignore_errors=True)
bt.check(rc == 0, "prefork stopped cleanly (exit %s)" % rc)
bt.finish()

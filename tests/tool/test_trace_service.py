"""billing-probes trace on a service made of several processes: a
pre-fork service (tests/tool/prefork_service.c: a parent and 3 workers,
one more worker forked while tracing).

- `--binary PROGRAM`: every process running the file, the worker started
  while tracing too: biz_metrics, tps and errors give the service's exact
  totals;
- several `-p`: exactly the processes named (a worker forked meanwhile is
  not), ended by itself once they are all gone;
- one `-p W0`: the semaphores raised in W0 only, not in the other workers
  (bpftrace -p: the kernel filters its uprobes to that process);
- resolution (--dry-run) and bad command lines; a module whose path a
  bpftrace program cannot carry safely is left out, never pasted in (refused,
  exit 2, when no other module carries the probes); a -p process with no
  USDT probes at all is refused (one line, exit 2), as list refuses it.

The service traced is a private copy (bt.private_copy): --binary attaches
to the file, so every process running it is seen, and no other test's
run of the build's program may be one of them.

Every wait is for a condition (a line printed, a semaphore raised) with a
generous deadline; never a sleep standing for one.  Needs root and
bpftrace (CI has both)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import (DEADLINE, Lines, check, expected, expected_biz, figures, finish, need_probes,  # noqa: E402
                      run, start_trace, stop_trace, wait_tps)

need_probes()
bt.require_tracing()

PRIVATE = tempfile.TemporaryDirectory(prefix="bp-tool-trace-service-")
SERVICE = bt.private_copy(os.environ["BP_PREFORK_SERVICE"], PRIVATE.name)
ROUNDS = 5


class Service:
    def __init__(self, workers=3):
        self.proc = subprocess.Popen([SERVICE, str(workers)], stdout=subprocess.PIPE, text=True)
        self.out = Lines(self.proc.stdout)
        self.workers = []
        for _ in range(workers):
            self.workers.append(int(self.out.wait_for(lambda l: l.startswith("worker "), "a worker").split()[1]))
        self.parent = int(self.out.wait_for(lambda l: l.startswith("parent "), "the parent").split()[1])
        check(self.parent == self.proc.pid, "pre-fork service up: parent %d, workers %s" % (self.parent, self.workers))

    def pids(self):
        return [self.parent] + self.workers

    def fork_worker(self):
        os.kill(self.parent, signal.SIGUSR2)
        pid = int(self.out.wait_for(lambda l: l.startswith("worker "), "the new worker").split()[1])
        self.workers.append(pid)
        return pid

    def fire(self, pids, rounds=ROUNDS):
        """rounds rounds in each of pids, one signal at a time per process
        (standard signals do not queue): wait for each round's line."""
        for _ in range(rounds):
            for pid in pids:
                os.kill(pid, signal.SIGUSR1)
            waiting = set(pids)
            while waiting:
                line = self.out.wait_for(lambda l: l.startswith("fired "), "fired lines from %s" % sorted(waiting))
                waiting.discard(int(line.split()[1]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def traced(pid, name):
    """The TRACED column of probe NAME in PID (True/False), None if unknown."""
    rc, out, err = run(["list", str(pid), "--json", "-P", "billing", "-n", name], timeout=60)
    if rc != 0:
        return None
    probes = json.loads(out)["probes"]
    return bool(probes) and all(p["traced"] for p in probes)


def wait_traced(pids, name, want=True):
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if all(traced(pid, name) == want for pid in pids):
            return True
        time.sleep(0.05)
    return False


PROBE = {"biz_metrics": "invoice__create", "tps": "transaction__done", "errors": "error"}
ARGS = {"biz_metrics": ["1"], "tps": [], "errors": ["1"]}
START = {"biz_metrics": "Tracing billing business figures", "tps": "Tracing transactions per second",
         "errors": "Tracing billing errors"}

# --- resolution and bad command lines ------------------------------------------------
svc = Service()
plain = subprocess.Popen(["sleep", "600"])  # a process with no billing module
try:
    rc, out, err = run(["trace", "biz_metrics", "--binary", SERVICE, "--dry-run"])
    check(rc == 0 and re.search(r"^usdt:%s:billing:invoice__create" % re.escape(os.path.realpath(SERVICE)), out,
                                flags=re.M) and "pid ==" not in out,
          "--binary --dry-run: the file's probes by path, no pid predicate (%d %r)" % (rc, err[-200:]))
    args = []
    for pid in svc.pids():
        args += ["-p", str(pid)]
    rc, out, err = run(["trace", "biz_metrics"] + args + ["--dry-run"])
    preds = set(re.findall(r"/\(((?:\(pid == \d+ && [^()]*\)(?: \|\| )?)+)\)", out))
    want = " || ".join("(pid == %d && curtask->group_leader->start_boottime / %d == %s)"
                       % (p, 10**9 // os.sysconf("SC_CLK_TCK"), open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[19])
                       for p in svc.pids())
    check(rc == 0 and preds == {want} and len(re.findall(r"^usdt:[^\n]*:billing:invoice__create", out, flags=re.M)) == 1,
          "four -p: one spec per probe (one file, read four times), predicate %r (%d %s)" % (want, rc, preds))
    for bad_args, why in ((["--binary", "/nonexistent/svc"], "no such file"),
                          (["--binary", "/etc/hostname"], "not an ELF file"),
                          (["--binary", SERVICE, "-p", str(svc.parent)], "one of them"),
                          (["-p", str(svc.parent), "-p", "999999999"], "no such process"),
                          (["--binary"], "--binary needs")):
        rc, out, err = run(["trace", "tps"] + bad_args, timeout=60)
        check(rc == 2 and len(err.splitlines()) == 1 and why in err,
              "trace tps %s: exit 2, one line %r (%d %r)" % (" ".join(bad_args), why, rc, err))
    # --dry-run: on a tool that took the plain process, the check fails rather than waits.
    rc, out, err = run(["trace", "tps", "-p", str(svc.parent), "-p", str(plain.pid), "--dry-run"])
    check(rc == 2 and len(err.splitlines()) == 1 and "%d: no USDT probes in the executable" % plain.pid in err,
          "-p of a process with no USDT probes: exit 2, one line, as list says (%d %r)" % (rc, err))
    rc, out, err = run(["trace", "cpu_profile", "-p", str(svc.parent), "-p", str(plain.pid), "--dry-run"])
    check(rc == 0 and "no USDT probes" not in err,
          "a script counting no USDT probe (cpu_profile) may name that process too (%d %r)" % (rc, err))

    # --- one -p: semaphores raised in that process only ------------------------------
    w0, others = svc.workers[0], svc.workers[1:]
    tracer, lines = start_trace("biz_metrics", ["-p", str(w0)], ARGS["biz_metrics"])
    lines.wait_for(lambda l: l.startswith(START["biz_metrics"]), "biz_metrics -p W0 to start")
    check(wait_traced([w0], "invoice__create"), "-p W0: invoice-create's semaphore raised in W0")
    check(all(traced(pid, "invoice__create") is False for pid in others + [svc.parent]),
          "-p W0: not raised in the other workers nor the parent")
    svc.fire(svc.pids(), 2)
    rc, out_lines, err = stop_trace(tracer, lines)
    got = figures("biz_metrics", out_lines)
    check(rc == 0 and got == expected_biz(2), "-p W0: only W0's rounds counted (%d %s %r)" % (rc, got, err[-300:]))
    check(wait_traced(svc.pids(), "invoice__create", want=False), "every semaphore back to 0 after the trace")
finally:
    svc.stop()
    plain.kill()
    plain.wait()

# --- a module path a bpftrace program cannot carry safely: refused, said once ---------------
LIB_ALL = os.environ.get("BP_LIB_ALL", "")
odd_dir = tempfile.mkdtemp(prefix="bp odd {x}; ")
holder = None
try:
    odd = os.path.join(odd_dir, "lib billing\"{}.so")
    shutil.copy(LIB_ALL, odd)
    holder = subprocess.Popen([sys.executable, "-c", "import ctypes, sys\nctypes.CDLL(sys.argv[1])\n"
                               "print('loaded', flush=True)\nsys.stdin.read()\n", odd],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=bt.preload_env(odd))
    check(holder.stdout.readline().strip() == "loaded", "a process maps %r" % odd)
    rc, out, err = run(["trace", "tps", "-p", str(holder.pid), "--dry-run"])
    check(rc == 2 and len(err.splitlines()) == 1 and "refused" in err and "cannot carry safely" in err
          and odd_dir not in out and "bp odd" not in out,
          "a module at %r, the only one with probes: refused with one line, its path nowhere in the program "
          "(rc=%d %r)" % (odd, rc, err[-300:]))
finally:
    if holder is not None:
        holder.stdin.close()
        holder.wait(timeout=DEADLINE)
    shutil.rmtree(odd_dir, ignore_errors=True)

# --- --binary: the whole service, a worker started while tracing ------------------------
for script in ("biz_metrics", "tps", "errors"):
    svc = Service()
    try:
        tracer, lines = start_trace(script, ["--binary", SERVICE], ARGS[script])
        lines.wait_for(lambda l: l.startswith(START[script]), "%s --binary to start" % script)
        check(wait_traced(svc.pids(), PROBE[script]), "%s --binary: semaphores raised in all 4 processes" % script)
        svc.fire(svc.pids())
        late = svc.fork_worker()
        check(traced(late, PROBE[script]) is True, "%s --binary: the worker forked while tracing is traced" % script)
        svc.fire([late])
        other = Service(1)  # a second instance of the binary: part of --binary's answer too
        try:
            check(wait_traced(other.pids(), PROBE[script]), "%s --binary: a process started later is traced" % script)
            other.fire(other.pids())
        finally:
            other.stop()
        rounds = 7 * ROUNDS  # 4 processes, the late worker, the second instance's 2
        if script == "tps":
            wait_tps(lines, 2 * rounds, "tps --binary")
        rc, out_lines, err = stop_trace(tracer, lines)
        got = figures(script, out_lines)
        check(rc == 0 and got == expected(script, rounds),
              "%s --binary: service totals exact over %d rounds in 7 processes (%s, want %s; rc %d %r)"
              % (script, rounds, got, expected(script, rounds), rc, err[-300:]))
    finally:
        svc.stop()

# --- several -p: the processes named, and only them ---------------------------------------
for script in ("biz_metrics", "tps", "errors"):
    svc = Service()
    try:
        named = svc.pids()
        args = []
        for pid in named:
            args += ["-p", str(pid)]
        tracer, lines = start_trace(script, args, ARGS[script])
        lines.wait_for(lambda l: l.startswith(START[script]), "%s -p x4 to start" % script)
        check(wait_traced(named, PROBE[script]), "%s -p x4: semaphores raised in the 4 processes" % script)
        svc.fire(named)
        late = svc.fork_worker()  # not named: its rounds must not count
        svc.fire([late])
        if script == "tps":
            wait_tps(lines, 2 * ROUNDS * len(named), "tps -p x4")
        svc.stop()  # every named process gone: trace ends by itself
        try:
            tracer.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            check(False, "%s -p x4: trace ended by itself once the processes were gone" % script)
            tracer.kill()
            tracer.wait()
        out_lines, err = lines.rest(), tracer.stderr.read()
        got = figures(script, out_lines)
        check(tracer.returncode == 0 and got == expected(script, ROUNDS * len(named)),
              "%s -p x4: exact totals of the 4 named processes, not the unnamed worker's (%s, want %s; rc %d %r)"
              % (script, got, expected(script, ROUNDS * len(named)), tracer.returncode, err[-300:]))
    finally:
        svc.stop()

finish()

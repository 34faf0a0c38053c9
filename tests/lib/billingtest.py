"""The one helper library of billing-probes' tests and benchmarks.

Every test driver (tests/*/test_*.py) and bench/ imports it the same way:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import billingtest as bt

It answers the questions each driver used to answer on its own: may this
test run here (skip with a reason, exit 77, meson's SKIP), can a tracer
attach here, which probes does billing.d declare; and it keeps the running
list of checks so a driver ends with one verdict.
"""
import ctypes
import ctypes.util
import fcntl
import json
import os
import pwd
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

SKIP = 77
TRACEFS = "/sys/kernel/tracing"
ORACLE_DTRACE = "/opt/oracle-dtrace/bin/dtrace"
SOURCE_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PROVIDER_D = os.path.join(SOURCE_ROOT, "provider", "billing.d")


def written(f, binary=False):
    """What a child process has written so far to the file f it shares
    with us, read with pread: a seek here would move the offset the child
    writes at, and its next line would overwrite earlier ones."""
    fd = f.fileno()
    data = os.pread(fd, os.fstat(fd).st_size, 0)
    return data if binary else data.decode("utf-8", errors="replace")

# --- verdicts -----------------------------------------------------------------


def skip(reason):
    """Exit 77 with the reason: a skip always says why."""
    print("SKIP: " + reason, flush=True)
    sys.exit(SKIP)


class Checks:
    """Collects named checks; finish() prints the verdict and exits."""

    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
            print("ok   " + what, flush=True)
        else:
            self.failures.append(what)
            print("FAIL " + what, flush=True)
        return bool(cond)

    def finish(self):
        if self.failures:
            print("%d check(s) failed:" % len(self.failures))
            for f in self.failures:
                print("  " + f)
            sys.exit(1)
        if self.passed == 0:
            print("FAIL no check ran")
            sys.exit(1)
        print("all %d checks passed" % self.passed)
        sys.exit(0)


_default = Checks()
check = _default.check
finish = _default.finish


# --- what this machine can do ---------------------------------------------------

def tracefs_ready():
    """Mounts tracefs where it is missing (a fresh machine); True when usable."""
    if os.path.exists(os.path.join(TRACEFS, "uprobe_events")):
        return True
    subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return os.path.exists(os.path.join(TRACEFS, "uprobe_events"))


def why_no_tracing(tracer="bpftrace"):
    """None when TRACER can attach uprobes here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "needs root to attach uprobes (CI runs as root)"
    if tracer and not shutil.which(tracer):
        return "%s is not installed (tests/install-deps.sh installs it)" % tracer
    if not tracefs_ready():
        return "tracefs is not mounted at %s and mounting it failed" % TRACEFS
    return None


def require_tracing(tracer="bpftrace"):
    why = why_no_tracing(tracer)
    if why:
        skip(why)


def require_root(what="this test"):
    if os.geteuid() != 0:
        skip("%s needs root (CI runs as root)" % what)


def bcrypt(password, cost=10, prefix="$2b$"):
    """A bcrypt hash of password through libxcrypt, for a web config
    (Prometheus, Alertmanager and the exporter check such hashes)."""
    lib = ctypes.CDLL(ctypes.util.find_library("crypt") or "libcrypt.so.1")
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    out = lib.crypt(password.encode(), lib.crypt_gensalt(prefix.encode(), cost, None, 0))
    if not out or not out.startswith(prefix.encode()):
        raise RuntimeError("libxcrypt made no bcrypt hash")
    return out.decode()


def require_program(name, package=None):
    """The program's path, or a skip naming the package that provides it."""
    path = shutil.which(name)
    if not path:
        skip("%s is not installed%s" % (name, " (apt-get install %s)" % package if package else ""))
    return path


def preload_env(library, env=None):
    """The environment for a program that is not built with a sanitizer
    (Python, say) to load LIBRARY with dlopen(): when LIBRARY comes from a
    sanitizer build, its runtimes must be loaded first (LD_PRELOAD), else
    ASan aborts the program ("ASan runtime does not come first"); leak
    checks are off, as the program's own allocations are not ours."""
    env = dict(os.environ if env is None else env)
    try:
        out = subprocess.run(["ldd", library], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return env
    runtimes = re.findall(r"^\s*lib(?:asan|ubsan|tsan)\.so\S*\s+=>\s+(\S+)", out, re.M)
    if runtimes:
        env["LD_PRELOAD"] = " ".join(runtimes + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else []))
        env["ASAN_OPTIONS"] = "detect_leaks=0:verify_asan_link_order=0"
    return env


ATTACKER = "bp-attacker"


def attacker():
    """The unprivileged local user the security tests act as: (uid, gid,
    prefix), where prefix + argv runs argv as that user with no other
    groups.  The user is made once (a system account with no home and no
    login shell); a lock keeps concurrent tests from racing useradd."""
    require_root("acting as another local user")
    return system_user(ATTACKER)


def system_user(name):
    """A local account NAME that a test runs a service as (a system
    account with its own group, no home, no login shell), made once:
    (uid, gid, prefix), where prefix + argv runs argv as that user with
    its own group only.  A lock keeps concurrent tests from racing
    useradd."""
    require_root("running a service as a user of its own")
    setpriv = require_program("setpriv", "util-linux")
    with open("/run/billing-probes-attacker.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            run(["useradd", "--system", "--no-create-home", "--user-group",
                 "--shell", "/usr/sbin/nologin", name], check=True)
            entry = pwd.getpwnam(name)
    prefix = [setpriv, "--reuid=%d" % entry.pw_uid, "--regid=%d" % entry.pw_gid, "--clear-groups", "--"]
    return entry.pw_uid, entry.pw_gid, prefix


def real_dtrace():
    """(path, None) for a real D compiler, or (None, reason).

    On Linux /usr/bin/dtrace is systemtap's -h/-G wrapper; Oracle's DTrace
    is built into /opt/oracle-dtrace by ../shared/oracle-dtrace/build.sh
    (tests/install-deps.sh runs it)."""
    for exe in (os.environ.get("BILLING_DTRACE"), ORACLE_DTRACE, shutil.which("dtrace")):
        if not exe or not os.access(exe, os.X_OK):
            continue
        try:
            out = subprocess.run([exe, "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=20).stdout.decode(errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            continue
        if "Sun D" in out or "Oracle D" in out or re.search(r"\bD [12]\.", out):
            if os.geteuid() != 0:
                return None, "DTrace needs root"
            return exe, None
    return None, "no real DTrace (run bash ../shared/oracle-dtrace/build.sh; systemtap's dtrace only does -h/-G)"


def remove_dtrace_uprobes(dtrace_pid, binary=None):
    """Removes the uprobes a dtrace process left behind when it was killed
    before its exit: its own groups (dt_<PID>_<provider>) and, given the
    test's own BINARY, the pid provider's dt_pid/ probes on it (shared
    between dtrace processes: the kernel refuses to remove one still in
    use).  Only for a PID this test started and that is gone; returns how
    many it asked to remove."""
    events = os.path.join(TRACEFS, "uprobe_events")
    if os.path.exists("/proc/%d" % dtrace_pid) or not os.path.exists(events):
        return 0
    mine = re.compile(r"^[pr]:(dt_%d_[^/\s]+/\S+)" % dtrace_pid)
    on_binary = re.compile(r"^[pr]:(dt_pid[^/\s]*/\S+) %s:" % re.escape(binary)) if binary else None
    try:
        lines = open(events).read().split("\n")
        names = [m.group(1) for m in map(mine.match, lines) if m]
        if on_binary:
            names += [m.group(1) for m in map(on_binary.match, lines) if m]
    except OSError:
        return 0
    for name in names:
        # just after the kill the kernel may still hold the event (EBUSY)
        for _ in range(10):
            try:  # os.open: Python's "a" mode seeks, which tracefs refuses
                fd = os.open(events, os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, ("-:%s\n" % name).encode())
                finally:
                    os.close(fd)
                break
            except OSError:
                time.sleep(0.2)  # busy, or in use by another dtrace: leave it
    return len(names)


def require_dtrace():
    exe, why = real_dtrace()
    if not exe:
        skip(why)
    return exe


# --- billing.d, read independently of provider/generate.py ----------------------

def provider_probes(path=PROVIDER_D):
    """[(provider, probe_d_name, [arg C types])] in billing.d's order.

    A regex of its own, so a slip in the generator's parser cannot hide
    behind the same slip here."""
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out = []
    for prov, body in re.findall(r"provider\s+(\w+)\s*\{(.*?)\}\s*;", text, flags=re.S):
        for name, args in re.findall(r"probe\s+(\w+)\s*\(([^)]*)\)\s*;", body):
            args = [a.strip() for a in args.split(",") if a.strip() and a.strip() != "void"]
            out.append((prov, name.replace("__", "-"), args))
    return out


def sdt_notes(path, provider="billing"):
    """{probe ELF name: [(site address, [argument specs]) per site]} of
    PROVIDER's stapsdt notes in the ELF file PATH, as readelf -n gives them."""
    out = run(["readelf", "-nW", path]).stdout
    notes = {}
    for prov, name, loc, args in re.findall(
            r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+)[^\n]*\s+Arguments:([^\n]*)", out):
        if prov == provider:
            notes.setdefault(name, []).append((int(loc, 16), args.split()))
    return notes


def elf_name(d_name):
    """payment-auth -> payment__auth (the spelling in ELF notes and bpftrace)."""
    return d_name.replace("-", "__")


# --- processes ------------------------------------------------------------------

def run(cmd, timeout=60, **kw):
    """subprocess.run with text output captured; never raises on exit status."""
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                          timeout=timeout, **kw)


def stop_process(proc, sig=None, timeout=30, group=()):
    """Send sig (default SIGTERM) to a Popen that still runs, wait, SIGKILL
    it and the PIDs in group (a pre-fork service's workers) after timeout
    seconds; returns its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM if sig is None else sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in [proc.pid, *group]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                # SIGKILL not acted on in a minute: the process is stuck in
                # the kernel; say where, rather than wait for meson's timeout
                raise RuntimeError("pid %d survives SIGKILL for 60 s: state %s, kernel stack:\n%s"
                                   % (proc.pid, _proc_text(proc.pid, "stat").split(") ")[-1][:1],
                                      _proc_text(proc.pid, "stack")))
    return proc.returncode


def _proc_text(pid, name):
    """/proc/PID/NAME, or why it could not be read."""
    try:
        with open("/proc/%d/%s" % (pid, name)) as f:
            return f.read()
    except OSError as e:
        return "(%s)" % e


def kill_all(*procs):
    """SIGKILL and reap each Popen given (None is skipped): a test's last
    clean-up, whatever state it stopped in."""
    for proc in procs:
        if proc is not None:
            proc.kill()
            proc.wait()


def _catches_sigint(pid):
    """Is a SIGINT handler installed (SigCgt in /proc/PID/status)?"""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return (int(line.split()[1], 16) >> 1) & 1 == 1
    except OSError:
        pass
    return False


def _wchan(pid):
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def interrupt_bpftrace(proc, timeout=120, already_sent=False):
    """Ctrl-C for a bpftrace Popen; waits up to timeout s, then SIGKILL;
    returns its exit code.

    The same rule as billing-probes trace, which documents it once
    (tools/billing-probes/bpftrace_process.h): bpftrace 0.17 acts on SIGINT
    only when it arrives in epoll_wait(), so the first is sent while it
    sleeps there (up to 2 s waiting for that: a SIGINT that lands while it
    prints drops the rest of what it has read), and another after a whole
    second there with bpftrace still catching SIGINT."""
    if proc.poll() is not None:
        return proc.returncode
    if not already_sent:
        # asleep in epoll_wait: every event read so far printed (bpftrace
        # 0.17 drops what it reads after a SIGINT until it leaves its loop)
        idle_by = time.monotonic() + 2
        while _wchan(proc.pid) != "do_epoll_wait" and time.monotonic() < idle_by and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
    now = time.monotonic()
    deadline, last_sent, resent = now + timeout, now, 0
    samples = []  # (time, waiting in epoll_wait) over the last second
    while proc.poll() is None:
        now = time.monotonic()
        if now > deadline:
            print("bpftrace still running %d s after SIGINT (re-sent %d times), waiting in %s: killed"
                  % (timeout, resent, _wchan(proc.pid) or "running"), flush=True)
            proc.kill()
            break
        samples = [s for s in samples if now - s[0] < 1.0] + [(now, _wchan(proc.pid) == "do_epoll_wait")]
        polling = samples[-1][1] and sum(w for _, w in samples) >= 0.8 * len(samples)
        if polling and now - last_sent >= 1.0 and _catches_sigint(proc.pid):
            proc.send_signal(signal.SIGINT)
            last_sent, resent, samples = now, resent + 1, []
            print("bpftrace missed SIGINT (bpftrace 0.17 checks it only in epoll_wait): sent again",
                  flush=True)
        time.sleep(0.05)
    return proc.wait()


def private_copy(program, directory):
    """A copy of PROGRAM under DIRECTORY that only this test runs: uprobes
    attach to a file (its inode), so `--binary COPY` sees this test's
    processes and no other test's run of the same build output, and the
    test can run beside others.  The libraries PROGRAM needs from an
    $ORIGIN-relative RUNPATH (meson's build tree) are copied to the same
    place relative to the copy, so the copy loads its own copies too;
    the folders they came from leave this process's LD_LIBRARY_PATH (meson
    test points it at the build's lib, and the loader searches it before
    RUNPATH), so the processes the test starts do not load the build's.
    Returns the copy's path."""
    program = os.path.realpath(program)
    dyn = run(["readelf", "-d", "-W", program]).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dyn)
    origin = [e for runpath in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^]]+)\]", dyn)
              for e in runpath.split(":") if e.startswith("$ORIGIN")]
    # as many of the program's folders as its RUNPATH climbs, so each
    # library's copy stays under DIRECTORY
    climb = max([e.split("/").count("..") for e in origin] + [0])
    parts = os.path.dirname(program).strip("/").split("/")
    copy = os.path.join(directory, *parts[len(parts) - climb:], os.path.basename(program))
    os.makedirs(os.path.dirname(copy), exist_ok=True)
    shutil.copy2(program, copy)
    for entry in origin:
        source = os.path.normpath(entry.replace("$ORIGIN", os.path.dirname(program)))
        target = os.path.normpath(entry.replace("$ORIGIN", os.path.dirname(copy)))
        for name in needed:
            if os.path.exists(os.path.join(source, name)):
                os.makedirs(target, exist_ok=True)
                shutil.copy2(os.path.realpath(os.path.join(source, name)), os.path.join(target, name))
                search = os.environ.get("LD_LIBRARY_PATH", "").split(":")
                os.environ["LD_LIBRARY_PATH"] = ":".join(
                    d for d in search if d and os.path.realpath(d) != os.path.realpath(source))
    return copy


def loaded_library(program, name):
    """The file the dynamic loader maps for PROGRAM's library NAME (a
    soname's start, e.g. libbillingprobes.so), asked of the loader itself
    (LD_TRACE_LOADED_OBJECTS, ldd's way): for a private_copy, its own
    library copy.  Raises RuntimeError when PROGRAM loads no such library."""
    out = run([program], env=dict(os.environ, LD_TRACE_LOADED_OBJECTS="1"), timeout=30).stdout
    m = re.search(r"^\s*%s\S* => (/\S+)" % re.escape(name), out, re.M)
    if not m:
        raise RuntimeError("%s loads no %s:\n%s" % (program, name, out))
    return os.path.realpath(m.group(1))


# --- sample arguments (provider/generate.py probe-samples-json) -----------------

def wait_for(what, fn, timeout=60, interval=0.25):
    """fn()'s first true value, polled every interval seconds; raises
    RuntimeError naming what after timeout seconds (deadlines, never a
    sleep that hopes)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Lines:
    """A child's output read by a thread, line by line.  wait_for takes the
    first line not taken yet for which a predicate holds, in any order (a
    pipe several processes write to), and raises RuntimeError naming what
    it waited for when none comes in time; rest() reads what is left."""

    def __init__(self, stream, timeout=60):
        self.timeout = timeout  # seconds, when a call gives none
        self.q = queue.Queue()
        self.seen = []     # every line read
        self.pending = []  # lines read that no wait_for has taken yet
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def _next(self, end):
        try:
            return self.q.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            return None

    def wait_for(self, pred, what, timeout=None):
        timeout = self.timeout if timeout is None else timeout
        for i, line in enumerate(self.pending):
            if pred(line):
                return self.pending.pop(i)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            line = self._next(end)
            if line is None:
                break
            self.seen.append(line)
            if pred(line):
                return line
            self.pending.append(line)
        raise RuntimeError("waited %d s for %s (last lines: %r)" % (timeout, what, self.seen[-10:]))

    def rest(self, timeout=None):
        end = time.monotonic() + (self.timeout if timeout is None else timeout)
        while time.monotonic() < end:
            line = self._next(end)
            if line is None:
                break
            self.seen.append(line)
        return self.seen


def load_samples(path):
    """probe_samples.json with every string value as bytes (the JSON keeps
    one character per byte), so it compares with what a consumer printed."""
    with open(path, encoding="utf-8") as f:
        samples = json.load(f)

    def as_bytes(values):
        return [v.encode("latin-1") if isinstance(v, str) else v for v in values]

    for p in samples["probes"]:
        p["macro"] = [as_bytes(r) for r in p["macro"]]
        if p["timing"]:
            p["timing"] = [as_bytes(r) for r in p["timing"]]
    return samples


# --- bpftrace on a program --------------------------------------------------------

def run_bpftrace(program, cmd, timeout=120):
    """bpftrace -e PROGRAM -c CMD (argv list); (stdout bytes, stderr text).

    -c raises the semaphores before CMD runs.  Exits 1 with bpftrace's
    message when it fails."""
    r = subprocess.run(["bpftrace", "-e", program, "-c", " ".join(cmd)], capture_output=True, timeout=timeout)
    err = r.stderr.decode(errors="replace")
    if r.returncode != 0:
        print("bpftrace exited %d:\n%s" % (r.returncode, err))
        sys.exit(1)
    return r.stdout, err


def run_bpftrace_pid(program, cmd, timeout=120):
    """Start CMD (which prints "ready", then waits for a line on stdin),
    attach bpftrace -p to it, then let it go; (CMD's stdout + bpftrace's
    stdout as bytes, bpftrace's stderr text).

    For probes in shared libraries: with -c, bpftrace 0.17 looks a library
    up before the program has loaded it."""
    target = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    bt = None
    try:
        if target.stdout.readline().strip() != b"ready":
            print("%s did not start" % cmd[0])
            sys.exit(1)
        # BEGIN runs once every probe is attached: its line is the signal.
        program = 'BEGIN { printf("attached\\n"); }\n' + program
        bt = subprocess.Popen(["bpftrace", "-p", str(target.pid), "-e", program],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = b""
        while line.strip() != b"attached":
            line = bt.stdout.readline()
            if not line:
                print("bpftrace did not attach:\n" + bt.stderr.read().decode(errors="replace"))
                sys.exit(1)
        target.stdin.write(b"go\n")
        target.stdin.close()
        target_out = target.stdout.read()
        target.wait(timeout=timeout)
        out, err = bt.communicate(timeout=timeout)
        return target_out + out, err.decode(errors="replace")
    finally:
        kill_all(target, bt)


def tps_seconds(text):
    """tps's table lines: [(TXNS, FAILED, FAIL%, partial)] in order."""
    return [(int(t), int(f), int(p), bool(note)) for t, f, p, note in
            re.findall(r"^\d\d:\d\d:\d\d\s+(\d+)\s+(\d+)\s+(\d+)(\s+partial \d+ ms)?$", text, flags=re.M)]


# --- option tables (tools/options) --------------------------------------------

# A --help line's option: "  -p, --name ARG  help", "  --name ...", "  -p ARG ...".
HELP_OPTION = re.compile(r"^  ((?:-\w, )?--[\w-]+|-\w)(?= |$)", re.M)


def check_option_table(cmd, help_text):
    """One option table: help_text lists exactly the options cmd prints
    (COMMAND --print-option-table), in its order (then the two every
    program has: --print-option-table, -h, --help).  The pages carry the
    table as printed: docs/write.py --check (the docs-write test)."""
    table = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    shown = " ".join([os.path.basename(cmd[0])] + cmd[1:])
    rows = [re.findall(r"`(--?[\w-]+)`", line.split("|")[1]) for line in table.splitlines()[2:]]
    helped = [re.findall(r"--?[\w-]+", m) for m in HELP_OPTION.findall(help_text)]
    check(len(rows) > 0 and helped == rows + [["--print-option-table"], ["-h", "--help"]],
          "%s: --help lists the table's options, in its order (table %s, --help %s)" % (shown, rows, helped))


def check_refused(what, cmd, want, prefix):
    """cmd is refused: exit 2 and one stderr line, starting with prefix and
    holding want."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    lines = p.stderr.splitlines()
    check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith(prefix) and want in lines[0],
          "%s: exit 2, one line %r... with %r (got %d: %r)" % (what, prefix, want, p.returncode, p.stderr))

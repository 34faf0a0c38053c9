"""What the container tests share: a pre-fork service (tests/tool's
prefork_service) run in its own PID and mount namespaces, driven from the
host by signals, its stdout read line by line.

    svc = NsService(unshare_cmd_prefix, workers=2)   # or PodmanService (test_podman.py)
    svc.fire(svc.host_pids(), rounds)                 # each process fires rounds rounds
    svc.stop()

Inside, the service prints namespace PIDs ("parent 1", "worker 7",
"fired 7 3"); NsPids maps them to host PIDs through /proc/PID/status.
Every wait is for a condition with a generous deadline (DEADLINE), never
a sleep standing for one.  rootfs() makes the Debian root podman runs
from, once per build folder.
"""
import fcntl
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
# the checks every container test uses, from the one test library
check, finish, skip = bt.check, bt.finish, bt.skip

DEADLINE = 180  # seconds for any one condition: ten times a slow machine's need
TOOL = os.environ.get("BP_TOOL", "")
EXPORTER = os.environ.get("BX_EXPORTER", "")
SERVICE = os.environ.get("BP_PREFORK_SERVICE", "")


def Lines(stream):
    """The child's output, line by line (billingtest.Lines), DEADLINE per wait."""
    return bt.Lines(stream, DEADLINE)


def ns_pids(host_pid):
    """The NSpid line of /proc/PID/status: [host pid, ..., innermost pid]."""
    try:
        with open("/proc/%d/status" % host_pid) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except OSError:
        pass
    return []


def children(host_pid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == host_pid:
            out.append(int(name))
    return out


def wait_until(cond, what, timeout=DEADLINE, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise RuntimeError("waited %d s for %s" % (timeout, what))


class Service:
    """A prefork_service whose parent is host PID self.parent, started by
    a launcher command (unshare or podman) given as argv."""

    def __init__(self, argv, workers, find_parent):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     stdin=subprocess.DEVNULL)
        self.out = Lines(self.proc.stdout)
        inner = [int(self.out.wait_for(lambda l: l.startswith("worker "), "worker %d" % i).split()[1])
                 for i in range(workers)]
        inner.append(int(self.out.wait_for(lambda l: l.startswith("parent "), "the parent").split()[1]))
        self.parent = wait_until(lambda: find_parent(self), "the service's host PID")
        self.workers = wait_until(lambda: sorted(children(self.parent)) if len(children(self.parent)) == workers
                                  else None, "%d workers under %d" % (workers, self.parent))
        self.inner_of = {pid: ns_pids(pid)[-1] for pid in self.host_pids()}
        if sorted(self.inner_of.values()) != sorted(inner):
            raise RuntimeError("namespace PIDs %s, announced %s" % (self.inner_of, inner))

    def host_pids(self):
        return [self.parent] + self.workers

    def fire(self, pids, rounds):
        """rounds rounds in each of pids (host PIDs), one signal per process
        at a time (standard signals do not queue): waits for each line."""
        for _ in range(rounds):
            for pid in pids:
                os.kill(pid, signal.SIGUSR1)
            waiting = {self.inner_of[pid] for pid in pids}
            while waiting:
                line = self.out.wait_for(lambda l: l.startswith("fired "), "fired lines from %s" % sorted(waiting))
                waiting.discard(int(line.split()[1]))

    def stop(self):
        """SIGTERM to the parent (the namespace's init: the signal is
        blocked and taken with sigwaitinfo, so it is delivered), which ends
        its workers; then the launcher."""
        try:
            os.kill(self.parent, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# The service's path inside, one per test process: --binary PATH looks
# for PATH in every process's root, so a path of its own keeps a test
# from counting another container test's service.
NS_INSIDE = "/srv/app-%d/renewald" % os.getpid()
NS_LAUNCH = r'''set -e
mount -t tmpfs tmpfs /srv
mkdir "${5%/*}"
if [ "$2" = copy ]; then cp "$1" "$5"; else : > "$5"; mount --bind "$1" "$5"; fi
mount -t tmpfs tmpfs "$3"
exec "$5" "$4"
'''


def ns_service(program, hidden, mode="bind", workers=2):
    """The pre-fork service in new PID and mount namespaces (unshare), at
    NS_INSIDE only: program (a file in the folder hidden, which a tmpfs
    then covers inside) bind-mounted there (mode "bind": the same file
    every time, a restart) or copied onto the namespace's tmpfs ("copy": a
    new file, as from a new image)."""
    argv = ["unshare", "--pid", "--mount", "--fork", "--mount-proc", "--propagation", "private",
            "sh", "-c", NS_LAUNCH, "sh", program, mode, hidden, str(workers), NS_INSIDE]

    def find_parent(svc):
        for pid in children(svc.proc.pid):
            if ns_pids(pid)[-1:] == [1]:
                return pid
        return None
    return Service(argv, workers, find_parent)


def run_tool(args, timeout=120):
    p = subprocess.run([TOOL] + list(args), capture_output=True, text=True, errors="replace", timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def apt_mirror():
    """The Debian mirror apt uses (deb822 URIs: or a one-line deb entry)."""
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*")):
        try:
            text = open(path).read()
        except OSError:
            continue
        for m in re.finditer(r"^URIs:\s*(\S+)|^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s", text, flags=re.M):
            uri = m.group(1) or m.group(2)
            if "security" not in uri:
                return uri
    return "http://deb.debian.org/debian"


def rootfs(cache):
    """A bookworm minbase root, made once and kept in the directory cache
    (a lock keeps two runs from making it at once)."""
    os.makedirs(cache, exist_ok=True)
    root = os.path.join(cache, "bookworm")
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(root, "etc", "debian_version")):
            tmp = root + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            r = bt.run(["debootstrap", "--variant=minbase", "bookworm", tmp, apt_mirror()], timeout=1800)
            if r.returncode != 0:
                check(False, "debootstrap of the container root (rc=%d %s)" % (r.returncode, r.stderr[-500:]))
                finish()
            shutil.rmtree(root, ignore_errors=True)
            os.rename(tmp, root)
    return root

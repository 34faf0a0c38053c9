"""What the distros suite shares beyond tests/lib/billingtest.py: the
Debian roots its tests run in, a command run inside one, the kit built
there the README's way, and the results file.

The roots: `debootstrap --variant=minbase RELEASE` trees under
ROOTS/RELEASE (/var/cache/billing-probes/roots: outside any clone, kept
between runs), made once and made again when stale (older than
MAX_AGE_DAYS, or broken).  Other runs may be using a root while it is
renewed, so a new one is built beside it and the two are exchanged in one
rename (renameat2 RENAME_EXCHANGE); the old one is removed once nothing
runs in it.  Packages come from tests/install-deps.sh, run inside the root
for the parts the suite needs (the one install script, on that release).

A command runs inside a root in a mount namespace of its own (unshare
--mount): /proc, /sys (tracefs, BTF), /dev, a private /dev/shm and /tmp,
this source tree read-only at /mnt/src and the run's work directory at
/mnt/work/RELEASE (in_work()).  Every mount ends with the command; nothing
is mounted in the root for anyone else, so runs side by side do not meet;
and the two roots' files never share a path (`--binary PATH`, trace's and
the exporter's, counts every process that runs PATH in its own root: one
root's service at another's path was counted twice).

The kit (ready(), the fixture of the suite: the first test of a release
makes it, the others wait on its lock): inside the root, the README's
build of this tree (`meson setup build -Dprobes=enabled`, every optional
part enabled so that a missing one fails, then `ninja`) in WORK/RELEASE,
made again from nothing when the root is another.
"""
import contextlib
import ctypes
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import billingtest as bt  # noqa: E402

SOURCE_ROOT = os.environ.get("DISTROS_SOURCE_ROOT", bt.SOURCE_ROOT)
WORK = os.environ.get("DISTROS_WORK", "")
RESULTS = os.environ.get("DISTROS_RESULTS", "")
CACHE = os.environ.get("BILLING_PROBES_CACHE", "/var/cache/billing-probes")
ROOTS = os.path.join(CACHE, "roots")
RELEASES = ("trixie", "sid")
MIRROR = "http://deb.debian.org/debian"
MAX_AGE_DAYS = 14
# tests/install-deps.sh's parts the suite's tests need in a root
PARTS = ("build", "probes", "tool", "tracing", "examples", "exporter")
# and the compiler cache that keeps a rebuild of unchanged files cheap
# (its files live in the root's /root/.ccache, kept with the root)
EXTRA = ("ccache",)
SETUP = ["-Dprobes=enabled", "-Dtool=enabled", "-Dexamples=enabled", "-Dexporter=enabled"]
IN_SRC = "/mnt/src"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def require_suite():
    if not WORK:
        bt.skip("DISTROS_WORK is not set: run through meson test")
    bt.require_root("building and entering Debian roots (chroot, mount namespaces)")
    for prog, pkg in (("debootstrap", "debootstrap"), ("unshare", "util-linux"), ("chroot", "coreutils")):
        bt.require_program(prog, pkg)


def log(*args):
    print("distros:", *args, flush=True)


# --- running a command inside a root ---------------------------------------------

MOUNTS = r"""
set -e
R=$1 SRC=$2 WORK=$3 IN_WORK=$4
shift 4
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount --rbind /dev "$R/dev"
mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
mount -t tmpfs -o mode=755 tmpfs "$R/mnt"
mkdir -p "$R/mnt/src" "$R$IN_WORK"
mount --bind -o ro "$SRC" "$R/mnt/src"
mount --bind "$WORK" "$R$IN_WORK"
exec chroot "$R" "$@"
"""


def in_work(work):
    """Where the work directory WORK (WORK/RELEASE for a release) is seen
    inside a root: /mnt/work/RELEASE, a path no other root's files have."""
    return "/mnt/work/" + os.path.basename(os.path.normpath(work))


def _propagation():
    """unshare's --propagation: private; but in a chroot, where / is no mount
    point and cannot be made private, the mounts as they are, when none is
    shared (nothing mounted for a root then reaches another namespace)."""
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split() for line in f]
    if any(m[4] == "/" for m in mounts):
        return "private"
    if any(f.startswith("shared:") for m in mounts for f in m[6:m.index("-")]):
        raise RuntimeError("run in a chroot whose mounts are shared with others: mounts for the roots would reach them")
    return "unchanged"


def inside(root, script, work, env=None):
    """The argv that runs the shell SCRIPT inside ROOT (a directory), in a
    mount namespace of its own, with a clean environment (PATH, HOME,
    LANG, and ENV)."""
    clean = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    clean.update(env or {})
    return (["unshare", "--mount", "--propagation", _propagation(), "bash", "-c", MOUNTS, "distros-mounts",
             root, SOURCE_ROOT, work, in_work(work), "/usr/bin/env", "-i"] + ["%s=%s" % kv for kv in sorted(clean.items())] +
            ["/bin/bash", "-c", script])


def _kill_tree(pid):
    """SIGKILL to PID and every process under it (past a deadline)."""
    tree, i = [pid], 0
    while i < len(tree):
        for task in glob.glob("/proc/%d/task/*/children" % tree[i]):
            try:
                tree += [int(c) for c in open(task).read().split()]
            except OSError:
                pass
        i += 1
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_inside(root, script, work, timeout, env=None, quiet=False):
    """Runs SCRIPT inside ROOT; (exit status, output).  Its output is
    printed as it comes unless QUIET (then returned only)."""
    # in this test's process group, which meson stops at its own timeout
    proc = subprocess.Popen(inside(root, script, work, env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    watchdog = threading.Timer(timeout, _kill_tree, (proc.pid,))
    watchdog.start()
    out = []
    try:
        for line in proc.stdout:
            out.append(line)
            if not quiet:
                sys.stdout.write(line)
                sys.stdout.flush()
        proc.wait()
    finally:
        watchdog.cancel()
    if proc.returncode == -signal.SIGKILL:
        out.append("distros: still running after %d s: stopped\n" % timeout)
    return proc.returncode, "".join(out)


# --- the roots ---------------------------------------------------------------------

def root_path(release):
    return os.path.join(ROOTS, release)


def _built_at(root):
    """When ROOT's packages were first installed (its dpkg log's first
    line): a root as debootstrap left it, or as another builder did."""
    try:
        with open(os.path.join(root, "var", "log", "dpkg.log")) as f:
            first = f.readline()
        return time.mktime(time.strptime(first[:19], "%Y-%m-%d %H:%M:%S"))
    except (OSError, ValueError):
        return None


def _codename(root):
    """The release ROOT is (its os-release; sid calls itself by the next
    release's name with /sid in debian_version)."""
    try:
        version = open(os.path.join(root, "etc", "debian_version")).read().strip()
        osr = open(os.path.join(root, "etc", "os-release")).read()
    except OSError:
        return None
    if version.endswith("/sid"):
        return "sid"
    m = re.search(r"^VERSION_CODENAME=(\S+)$", osr, re.M)
    return m.group(1) if m else None


def why_stale(release, root):
    """None when ROOT is a usable root of RELEASE young enough, else why not."""
    if not os.path.isdir(root):
        return "not built yet"
    if not os.access(os.path.join(root, "usr", "bin", "apt-get"), os.X_OK):
        return "no apt-get in it (a broken or unfinished root)"
    if _codename(root) != release:
        return "it is %s, not %s" % (_codename(root), release)
    built = _built_at(root)
    if built is None:
        return "no dpkg log says when it was built"
    age = (time.time() - built) / 86400
    if age > MAX_AGE_DAYS:
        return "built %.0f days ago (a root is renewed after %d)" % (age, MAX_AGE_DAYS)
    return None


def _exchange(a, b):
    """Swaps the directories A and B in one step (renameat2 RENAME_EXCHANGE):
    a process running in either never sees a path without a root."""
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, a.encode(), at_fdcwd, b.encode(), rename_exchange) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "renameat2(%s, %s, RENAME_EXCHANGE): %s" % (a, b, os.strerror(e)))


def _in_use(path):
    """Does a process run, or a mount sit, inside PATH?"""
    inner = os.path.realpath(path) + os.sep
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for link in ("root", "cwd"):
            try:
                if (os.readlink("/proc/%s/%s" % (pid, link)) + os.sep).startswith(inner):
                    return True
            except OSError:
                pass
    with open("/proc/self/mountinfo") as f:
        return any((line.split()[4] + os.sep).startswith(inner) for line in f)


def _remove_unused_old(release):
    for old in glob.glob(root_path(release) + ".old-*"):
        if not _in_use(old):
            shutil.rmtree(old, ignore_errors=True)


def _debootstrap(release, target, logf):
    r = subprocess.run(["debootstrap", "--variant=minbase", release, target, MIRROR], stdout=logf,
                       stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise RuntimeError("debootstrap %s exited %d (log: %s)" % (release, r.returncode, logf.name))


@contextlib.contextmanager
def root_lock(release):
    os.makedirs(ROOTS, exist_ok=True)
    with open(os.path.join(ROOTS, ".%s.lock" % release), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_root(release, work):
    """ROOTS/RELEASE, usable and fresh, with the suite's packages: built
    (or renewed) first when it is not.  Call under root_lock."""
    root = root_path(release)
    _remove_unused_old(release)
    why = why_stale(release, root)
    if why:
        new = "%s.new-%d" % (root, os.getpid())
        shutil.rmtree(new, ignore_errors=True)
        t0 = time.monotonic()
        log("%s root %s: %s; building one beside it with debootstrap" % (release, root, why))
        try:
            with open(os.path.join(work, "debootstrap-%s.log" % release), "w") as logf:
                _debootstrap(release, new, logf)
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)  # half a root is a gigabyte of nothing
            raise
        if os.path.isdir(root):
            _exchange(new, root)
            os.rename(new, "%s.old-%s-%d" % (root, time.strftime("%Y%m%d%H%M%S"), os.getpid()))
        else:
            os.rename(new, root)
        log("%s root built in %.0f s" % (release, time.monotonic() - t0))
        _remove_unused_old(release)
    # A root is a test fixture renewed when stale, and a mirror snapshot's
    # Release file may be past its Valid-Until: apt takes it all the same.
    conf = os.path.join(root, "etc", "apt", "apt.conf.d", "99billing-probes-root")
    if not os.path.exists(conf):
        with open(conf, "w") as f:
            f.write('// tests/distros: a test root, renewed after %d days\nAcquire::Check-Valid-Until "false";\n'
                    % MAX_AGE_DAYS)
    t0 = time.monotonic()
    rc, out = run_inside(root, "bash %s/tests/install-deps.sh %s && { dpkg-query -W %s >/dev/null 2>&1 || "
                         "apt-get install -y -qq --no-install-recommends %s >/dev/null; }"
                         % (IN_SRC, " ".join(PARTS), " ".join(EXTRA), " ".join(EXTRA)),
                         work, timeout=3600, env={"DEBIAN_FRONTEND": "noninteractive"})
    if rc != 0:
        raise RuntimeError("tests/install-deps.sh %s in the %s root exited %d" % (" ".join(PARTS), release, rc))
    log("%s root ready (%s; packages checked in %.0f s)" % (release, root, time.monotonic() - t0))
    return root


# --- the kit built inside -------------------------------------------------------------

def _root_id(root):
    """Which root, with which packages: a build made in another is not reused."""
    st = os.stat(os.path.join(root, "var", "lib", "dpkg", "status"))
    return "%d %d %s" % (os.stat(root).st_ino, st.st_ino, st.st_mtime)


def _build_id(root, work):
    """The root, and where the build sits in it (meson keeps its paths)."""
    return "%s %s" % (_root_id(root), in_work(work))


def ready(release):
    """(root, work directory) of RELEASE with this tree built inside it,
    the README's way: set up by the first test to ask, under the lock, and
    brought up to date by each (ninja: nothing to do once built)."""
    require_suite()
    work = os.path.join(WORK, release)
    os.makedirs(work, exist_ok=True)
    with root_lock(release):
        root = ensure_root(release, work)
        stamp = os.path.join(work, "root-id")
        if not os.path.exists(stamp) or open(stamp).read() != _build_id(root, work):
            shutil.rmtree(os.path.join(work, "build"), ignore_errors=True)  # objects of another compiler
            with open(stamp, "w") as f:
                f.write(_build_id(root, work))
        t0 = time.monotonic()
        setup = "" if os.path.isdir(os.path.join(work, "build", "meson-info")) else \
            "meson setup build %s %s >setup.log 2>&1 || { tail -n 30 setup.log; exit 1; }; " % (IN_SRC, " ".join(SETUP))
        # The test programs after it: meson 1.7 builds them for meson test
        # only (build_by_default: false), and the suites run --no-rebuild.
        rc, out = run_inside(root, "cd %s && %sninja -C build >ninja.log 2>&1 && "
                             "ninja -C build meson-test-prereq >ninja-tests.log 2>&1 || "
                             "{ grep -B2 -A20 -m3 -E 'error|FAILED' ninja.log ninja-tests.log; exit 1; }"
                             % (in_work(work), setup), work, timeout=3600)
        if rc != 0:
            raise RuntimeError("the README's build in the %s root failed (exit %d)" % (release, rc))
        steps = len(re.findall(r"^\[\d+/\d+\]", open(os.path.join(work, "ninja.log")).read(), re.M))
        log("%s: the README's build (%s`ninja -C build`: %d steps) in %.0f s" % (
            release, "`meson setup build %s`, " % " ".join(SETUP) if setup else "", steps, time.monotonic() - t0))
    return root, work


# --- what ran: the results file ---------------------------------------------------------

VERSIONS = r"""
v() { "$@" 2>/dev/null | head -n 1; }
echo "debian=$(cat /etc/debian_version)"
echo "bpftrace=$(v bpftrace --version)"
echo "libbpf=$(pkg-config --modversion libbpf)"
echo "gcc=$(gcc -dumpfullversion)"
echo "clang=$(v clang --version)"
echo "prometheus=$(v prometheus --version)"
echo "alertmanager=$(v prometheus-alertmanager --version)"
echo "meson=$(meson --version)"
"""
VERSION_RE = {"bpftrace": r"v?(\d[\w.~+-]*)", "clang": r"version (\S+)", "prometheus": r"version (\S+)",
              "alertmanager": r"version (\S+)"}


def versions(root=None, work=None):
    """{tool: version} of what the root runs (None: this machine)."""
    if root is None:
        out = subprocess.run(["bash", "-c", VERSIONS], capture_output=True, text=True, timeout=120).stdout
    else:
        rc, out = run_inside(root, VERSIONS, work, timeout=120, quiet=True)
    found = {}
    for line in out.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            m = re.search(VERSION_RE[k], v) if k in VERSION_RE else None
            found[k] = (m.group(1) if m else v).strip() or None
    return found


def record(release, part, result, seconds, failed, ran, extra=None):
    """Adds PART's outcome on RELEASE to the results file (one file for the
    suite's run, written under a lock by each test): its result, the tests
    and cases that FAILED, how many of each it RAN ({"tests": N, ...}),
    with the versions of this machine, where every other suite runs.  A
    file of another commit is another run's: started afresh."""
    if not RESULTS:
        return
    with open(RESULTS + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            doc = json.load(open(RESULTS))
        except (OSError, ValueError):
            doc = {}
        try:
            commit = bt.run(["git", "-C", SOURCE_ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip() or None
        except OSError:  # no git: a tree from a tarball
            commit = None
        if doc.get("commit") != commit or "releases" not in doc:  # another state of the tree: a new run
            doc = {"commit": commit, "releases": {}}
        doc["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        doc["kernel"] = os.uname().release
        doc["cores"] = os.cpu_count()
        if "host" not in doc:
            doc["host"] = {"versions": versions()}
        rel = doc["releases"].setdefault(release, {"parts": {}})
        rel.update(extra or {})
        rel["parts"][part] = {"result": result, "s": round(seconds), "failed": list(failed), "ran": ran}
        tmp = RESULTS + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        os.replace(tmp, RESULTS)


def main():
    """`distrostest.py roots WORK`: both roots built, renewed or checked
    now (tests/run-all.sh, before the plain phase, whose Prometheus 3 tests
    run the sid root's binary); exit 1 naming the release that failed."""
    if sys.argv[1:2] != ["roots"] or len(sys.argv) != 3:
        sys.exit("usage: distrostest.py roots WORK")
    os.makedirs(sys.argv[2], exist_ok=True)
    for release in RELEASES:
        try:
            with root_lock(release):
                ensure_root(release, sys.argv[2])
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            sys.exit("distros: the %s root: %s" % (release, e))


if __name__ == "__main__":
    main()

"""What the billing-probes security tests share: the built programs meson
passes (meson.build), the attacker (billingtest.attacker()), processes
the attacker runs, and the tool run as root with its output as bytes (a
terminal control byte must be seen as it is).

BP_TOOL, BP_LIB_ALL (a library carrying every probe), BP_SUBSET_PROGRAM
(a program carrying some; waits for a line on stdin with --wait),
BP_LYING_NOTES (lying_notes.c), BP_PROBES (1 when the build has probes).
Point BP_TOOL at another build's billing-probes to replay the attacks on
it (the report of issue 20 says which failed on the code before).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import billingtest as bt  # noqa: E402
# the checks every security test of the tool uses, from the one test library
check, finish, skip = bt.check, bt.finish, bt.skip

TOOL = os.environ.get("BP_TOOL", "")
LIB_ALL = os.environ.get("BP_LIB_ALL", "")
# what a process that loads LIB_ALL with ctypes needs (a sanitizer build's runtimes)
LOADER_ENV = bt.preload_env(LIB_ALL)
SUBSET = os.environ.get("BP_SUBSET_PROGRAM", "")
LYING = os.environ.get("BP_LYING_NOTES", "")
PROBES = os.environ.get("BP_PROBES", "0") == "1"


def need_probes():
    if not PROBES:
        skip("this build has no probes (-Dprobes=disabled or no dtrace/sys/sdt.h)")


def attacker_dir():
    """A fresh directory the attacker owns (0755, under /tmp), as one they
    would make themselves; (uid, gid, prefix, path)."""
    uid, gid, prefix = bt.attacker()
    path = tempfile.mkdtemp(prefix="bp-sec-")
    os.chown(path, uid, gid)
    os.chmod(path, 0o755)
    return uid, gid, prefix, path


def root_dir():
    """A fresh directory only root may write (0700)."""
    return tempfile.mkdtemp(prefix="bp-sec-root-")


def remove(path):
    shutil.rmtree(path, ignore_errors=True)


def tool(args, timeout=60, env=None, cwd=None):
    """billing-probes as root: (exit status, stdout bytes, stderr bytes)."""
    p = subprocess.run([TOOL] + list(args), capture_output=True, timeout=timeout, env=env, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def tool_while(holder, args, seconds=3, env=None, cwd=None):
    """billing-probes as root while holder lives, for up to `seconds`
    (a trace that has not ended by then is given its end: holder
    stopped); (exit status, stdout bytes, stderr bytes), -9 if it had to
    be killed 60 s after that."""
    p = subprocess.Popen([TOOL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        out, err = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        holder.stop()
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
    return p.returncode, out, err


def kill_all(procs):
    """Ends what a test started and is still running."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def lines(data):
    return [l for l in data.decode("latin-1").split("\n") if l]


# The attacker runs the system's Python: the one running the test may sit
# in a directory only root may enter.
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable

# The attacker's process: loads each library given (ctypes), says
# "loaded", and lives until its stdin closes.
_HOLDER = ("import ctypes, sys\n"
           "for path in sys.argv[1:]:\n"
           "    ctypes.CDLL(path)\n"
           "print('loaded', flush=True)\n"
           "sys.stdin.read()\n")


class Holder:
    """A process of the attacker's that has copies of LIB_ALL loaded from
    the paths given (copied there as the attacker, directories made as
    needed).  stop() ends it."""

    def __init__(self, prefix, paths):
        copy = ("import os, shutil, sys\n"
                "for path in sys.argv[2:]:\n"
                "    os.makedirs(os.path.dirname(path), exist_ok=True)\n"
                "    shutil.copy(sys.argv[1], path)\n")
        subprocess.run(prefix + [PYTHON, "-c", copy, LIB_ALL] + list(paths), check=True)
        self.proc = subprocess.Popen(prefix + [PYTHON, "-c", _HOLDER] + list(paths),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=LOADER_ENV)
        self.ok = self.proc.stdout.readline().strip() == b"loaded"
        self.pid = self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

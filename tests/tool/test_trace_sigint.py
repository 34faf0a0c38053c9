"""billing-probes trace: a SIGINT that bpftrace 0.17 misses is sent again.

bpftrace 0.17 sees SIGINT only while it waits in epoll_wait(); one handled
anywhere else sets its flag and is never looked at again, so it polls
until killed (6 of 60 stops under CPU contention here; once in CI, 120 s).
The launcher sends SIGINT again when bpftrace still catches SIGINT and has
waited in epoll_wait for a full second since the last one.

A stand-in for bpftrace (BPFTRACE=...) makes the miss certain: it counts
SIGINTs in its handler, waits in epoll_wait, and stops only at the Nth.
Three cases: the traced process ends (the launcher's own SIGINT, missed
once), the same without a miss (no second SIGINT), and Ctrl-C to the
launcher (forwarded, missed once); in each, the stand-in's trailing blank
lines are trimmed as bpftrace's are.  And the tests' own way to stop a
bpftrace, billingtest.interrupt_bpftrace(), on the same stand-in.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import TOOL, check, finish, need_probes  # noqa: E402

need_probes()

SUBSET = os.environ["BP_SUBSET_PROGRAM"]
MISSED = "bpftrace missed SIGINT"

STAND_IN = '''#!%s
import os, select, signal, sys
if sys.argv[1:] == ["--version"]:  # trace asks which bpftrace it runs
    print("bpftrace v0.17.0")
    sys.exit(0)
seen = 0
def on_sigint(sig, frame):
    global seen
    seen += 1
signal.signal(signal.SIGINT, on_sigint)
print("Attaching 6 probes...", flush=True)  # biz_metrics on subset_program: BEGIN, 3 USDT, interval, END
poll = select.epoll()
while seen < int(os.environ["STAND_IN_STOP_AT"]):
    poll.poll(0.1)
signal.signal(signal.SIGINT, signal.SIG_DFL)  # as bpftrace before it prints its maps
print("stopped at SIGINT %%d\\n\\nthe last line\\n\\n\\n" %% seen, flush=True)  # bpftrace trails blank lines
''' % sys.executable


def trace(stand_in, stop_at, ctrl_c):
    """Run the launcher with the stand-in on subset_program; (exit status,
    stdout, stderr, seconds from the stop to the launcher's exit)."""
    prog = subprocess.Popen([SUBSET, "1", "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    launcher = None
    try:
        check(prog.stdout.readline().strip() == b"ready", "subset_program started")
        env = dict(os.environ, BPFTRACE=stand_in, STAND_IN_STOP_AT=str(stop_at))
        launcher = subprocess.Popen([TOOL, "trace", "biz_metrics", "-p", str(prog.pid)], env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(launcher.stdout.readline().startswith("Attaching"), "the stand-in runs under the launcher")
        time.sleep(0.3)  # its handler in place
        t0 = time.monotonic()
        if ctrl_c:
            launcher.send_signal(signal.SIGINT)
        else:
            prog.stdin.write(b"go\n")
            prog.stdin.close()
            prog.wait(10)
        out, err = launcher.communicate(timeout=30)
        return launcher.returncode, out, err, time.monotonic() - t0
    finally:
        for p in (launcher, prog):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


with tempfile.TemporaryDirectory() as tmp:
    stand_in = os.path.join(tmp, "bpftrace")
    with open(stand_in, "w") as f:
        f.write(STAND_IN)
    os.chmod(stand_in, 0o755)

    for what, stop_at, ctrl_c in (("traced process ended, first SIGINT missed", 2, False),
                                  ("traced process ended, first SIGINT seen", 1, False),
                                  ("Ctrl-C to the launcher, forwarded, missed", 2, True)):
        rc, out, err, took = trace(stand_in, stop_at, ctrl_c)
        print("%s: exit %d after %.1f s\n%s%s" % (what, rc, took, out, err))
        check(rc == 0, "%s: the launcher exits 0 (%d)" % (what, rc))
        check("stopped at SIGINT %d" % stop_at in out, "%s: the stand-in stopped at SIGINT %d" % (what, stop_at))
        check(err.count(MISSED) == stop_at - 1,
              "%s: %d 'missed SIGINT' line(s) (%d)" % (what, stop_at - 1, err.count(MISSED)))
        check(took < 10, "%s: stopped within 10 s (%.1f s)" % (what, took))
        check(out.endswith("\n\nthe last line\n"),
              "%s: blank lines kept between lines, none trailing (%r)" % (what, out[-40:]))

    for stop_at in (1, 2):
        proc = subprocess.Popen([stand_in], env=dict(os.environ, STAND_IN_STOP_AT=str(stop_at)),
                                stdout=subprocess.PIPE, text=True)
        proc.stdout.readline()
        time.sleep(0.3)
        t0 = time.monotonic()
        rc = bt.interrupt_bpftrace(proc, 30)
        out = proc.stdout.read()
        check(rc == 0 and "stopped at SIGINT %d" % stop_at in out,
              "interrupt_bpftrace: the stand-in stopping at SIGINT %d exits 0 after %.1f s (%d, %r)"
              % (stop_at, time.monotonic() - t0, rc, out.strip()))

finish()

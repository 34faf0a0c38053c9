"""Finding 6 of issue 34: `trace -p A -p B` counted whoever got PID B
after B exited.  Replayed as the unprivileged attacker: root traces two
processes of a service (A and B, copies of one program in a directory
only root may write); B fires and exits; the attacker forks children
that exit at once until one is given B's PID (pid_cycler.c: no
privilege, PIDs wrap at pid_max), and that child runs the same program
and fires.  Wanted: only A's and B's rounds counted, the trace ends when
A does.  On the code before, the attacker's rounds were counted as the
service's (3 rounds' worth for 2).

And a named PID that maps no billing module (the attacker's shell) is
one line and exit 2, never a trace that prints nothing.
"""
import os
import tempfile
import shutil
import subprocess
import sys

from sectest import SUBSET, check, finish, kill_all, lines, need_probes, remove, tool
import billingtest as bt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tool"))
from tooltest import biz_total, fire_waiting, trace_attached, waiting_program  # noqa: E402

need_probes()
bt.require_tracing()
uid, gid, prefix = bt.attacker()
ROUNDS = 5
MAX_FORKS = 200000  # pid_max is 32,768 here: a wrap and then some; well under the test's time

# the service's program and the attacker's cycler, where the attacker may run them
place = os.path.realpath(tempfile.mkdtemp(prefix="bp-sec-pidreuse-"))
os.chmod(place, 0o755)
program = os.path.join(place, "billing-service")
cycler = os.path.join(place, "pid_cycler")
shutil.copy(SUBSET, program)
shutil.copy(os.environ["BP_PID_CYCLER"], cycler)
for path in (program, cycler):
    os.chmod(path, 0o755)


procs = []
try:
    # --- a PID that maps no billing module: refused -------------------------------------
    shell = subprocess.Popen(prefix + ["sleep", "60"])
    procs.append(shell)
    rc, out, err = tool(["trace", "biz_metrics", "-p", str(shell.pid), "--", "1"], timeout=60)
    check(rc == 2 and len(lines(err)) == 1 and not out,
          "trace -p <the attacker's sleep>: one line, exit 2, nothing traced (%d %r %r)" % (rc, err[-300:], out[-200:]))

    # --- a traced PID reused by the attacker --------------------------------------------
    a, b = waiting_program(program, ROUNDS), waiting_program(program, ROUNDS)
    procs += [a, b]
    tracer, head = trace_attached(["biz_metrics", "-p", str(a.pid), "-p", str(b.pid), "--", "1"])
    procs.append(tracer)
    check(head.startswith("Attaching "), "the trace attached (%r)" % head[-300:])
    fire_waiting(b)
    cyc = subprocess.run(prefix + [cycler, str(b.pid), str(MAX_FORKS), program, str(ROUNDS)],
                         capture_output=True, text=True, timeout=240)
    print(cyc.stdout.strip())
    check(cyc.returncode == 0, "the attacker was given PID %d and fired %d rounds from it (%d %r)"
          % (b.pid, ROUNDS, cyc.returncode, (cyc.stdout + cyc.stderr)[-300:]))
    fire_waiting(a)
    out, err = tracer.communicate(timeout=60)
    rows = biz_total(head + out)
    got = rows.get(("invoices", 0)) if rows else None
    check(tracer.returncode == 0 and got == (2 * ROUNDS, 2 * ROUNDS * 1250),
          "trace -p A -p B, B's PID then the attacker's: %d invoices of A and B, none of his (%d %s %r)"
          % (2 * ROUNDS, tracer.returncode, got, err[-300:]))
finally:
    kill_all(procs)
    remove(place)
finish()

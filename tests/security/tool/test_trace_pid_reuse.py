#!/usr/bin/env python3
"""A traced PID is the process, not the number (issue 34, finding 6),
replayed as the unprivileged user of billingtest.attacker(): root runs
`billing-probes trace biz_metrics -p A -p B` on two processes of the
subset service; B fires its rounds and exits; the attacker forks until
one of its processes gets B's PID (no privilege: the PIDs wrap) and that
process runs the same service, firing its own rounds; then A fires and
exits, which ends the trace.  Only A's and B's rounds may be counted.

On the code before (a predicate on the PID number alone) the trace
counted the attacker's rounds as B's.  Needs root and bpftrace."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, check, finish  # noqa: E402

ROUNDS, CYCLE_SECONDS = 7, 90
st.need_probes()
bt.require_tracing()
uid, gid, prefix = bt.attacker()

# The attacker forks until a child has the PID wanted; that child runs the
# service (its stdout closed), the others exit at once.  Prints the forks
# it took and the service's exit status, or "missed" after the deadline.
CYCLER = ("import os, sys, time\n"
          "want, service, rounds, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])\n"
          "end, forks = time.monotonic() + seconds, 0\n"
          "while time.monotonic() < end:\n"
          "    pid = os.fork()\n"
          "    if pid == 0:\n"
          "        if os.getpid() == want:\n"
          "            fd = os.open(os.devnull, os.O_WRONLY)\n"
          "            os.dup2(fd, 1)\n"
          "            os.execv(service, [service, rounds])\n"
          "        os._exit(0)\n"
          "    forks += 1\n"
          "    _, status = os.waitpid(pid, 0)\n"
          "    if pid == want:\n"
          "        print('got', forks, os.waitstatus_to_exitcode(status), flush=True)\n"
          "        sys.exit(0)\n"
          "print('missed', forks, flush=True)\n")


def service_waiting():
    p = subprocess.Popen([st.SUBSET, str(ROUNDS), "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    p.stdout.readline()
    return p


def fire(p):
    p.stdin.write("go\n")
    p.stdin.flush()
    p.wait(timeout=60)


def invoices(text):
    """biz_metrics' TOTAL invoices count, None without a TOTAL."""
    m = re.search(r"TOTAL since start.*?^invoices (\d+)$", text, flags=re.S | re.M)
    return int(m.group(1)) if m else None


a = b = tracer = cycler = None
try:
    a, b = service_waiting(), service_waiting()
    tracer = subprocess.Popen([st.TOOL, "trace", "biz_metrics", "-p", str(a.pid), "-p", str(b.pid), "--", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    head = ""
    while True:  # bpftrace says "Attaching N probes..." once they are in
        line = tracer.stdout.readline()
        head += line
        if not line or not line.startswith("Attaching "):
            break
    fire(b)
    t0 = time.monotonic()
    cycler = subprocess.run(prefix + [st.PYTHON, "-c", CYCLER, str(b.pid), st.SUBSET, str(ROUNDS),
                                      str(CYCLE_SECONDS)], capture_output=True, text=True, timeout=CYCLE_SECONDS + 30)
    got = cycler.stdout.split()
    check(got[:1] == ["got"] and got[2:] == ["0"],
          "the attacker's process got B's PID %d and fired %d rounds (%s, %.0f s; %s)"
          % (b.pid, ROUNDS, cycler.stdout.strip(), time.monotonic() - t0, cycler.stderr.strip()[-200:]))
    fire(a)
    out, err = tracer.communicate(timeout=60)
    counted = invoices(head + out)
    check(tracer.returncode == 0 and counted == 2 * ROUNDS,
          "trace -p A -p B counted A's and B's %d invoices, none of the attacker's (%s; exit %s %r)"
          % (2 * ROUNDS, counted, tracer.returncode, err[-300:]))
finally:
    st.kill_all([p for p in (a, b, tracer) if p])
finish()

"""billing-probes doctor PID: a semaphore raised with no uprobe behind it.

A tracer killed with SIGKILL can leave a probe's semaphore raised: the
probe is then "traced" for ever and its arguments are evaluated on every
call.  Here one is raised by hand through /proc/PID/mem (what such a
tracer leaves), doctor must report it stale and --clear-stale must lower
it; a semaphore that a live bpftrace holds must be reported as in use and
never lowered, also when a stale one sits beside it.  The program is a
private copy (bt.private_copy): a tracer attached to the build's file
elsewhere would raise semaphores in this process too.  Needs root and
bpftrace (CI has both).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import PROGRAM, check, finish, need_probes, run  # noqa: E402

need_probes()
bt.require_tracing()

LIVE, STALE = "payment__auth", "refund__process"
PRIVATE = tempfile.TemporaryDirectory(prefix="bp-tool-stale-")
PROGRAM = bt.private_copy(PROGRAM, PRIVATE.name)


def probes(pid):
    rc, out, err = run(["list", str(pid), "--json", "-P", "billing"])
    return {p["name"]: p for p in json.loads(out)["probes"]} if rc == 0 else {}


def set_semaphore(pid, name, value):
    addr = int(probes(pid)[name]["runtime_semaphore"], 16)
    with open("/proc/%d/mem" % pid, "r+b", buffering=0) as mem:
        mem.seek(addr)
        mem.write(struct.pack("<H", value))


def doctor(pid, *extra):
    rc, out, err = run(["doctor", str(pid)] + list(extra), timeout=60)
    line = next((l for l in out.splitlines() if "  semaphores: " in l), "")
    return rc, line, err


prog = subprocess.Popen([PROGRAM, "60"], stdout=subprocess.PIPE, text=True)
tracer = None
try:
    prog.stdout.readline()
    pid = prog.pid
    rc, line, err = doctor(pid)
    check(line.startswith("OK") and "0 raised" in line and "none stale" in line,
          "nothing traced: no semaphore raised, none stale (%s)" % line)

    # What a tracer killed with SIGKILL leaves behind.
    set_semaphore(pid, STALE, 1)
    check(probes(pid)[STALE]["traced"] is True, "raised by hand: list says %s traced" % STALE)
    rc, line, err = doctor(pid)
    check(line.startswith("WARN") and "1 stale" in line and "billing:%s = 1" % STALE in line
          and "--clear-stale" in line, "doctor PID reports the stale semaphore and how to clear it: %s" % line)
    check(rc == 0, "a stale semaphore is a warning, not a failure: exit 0 (%d)" % rc)
    rc, line, err = doctor(pid, "--clear-stale")
    check(line.startswith("OK") and "cleared 1 of 1" in line, "--clear-stale clears it: %s" % line)
    check(probes(pid)[STALE]["semaphore_value"] == 0, "the semaphore is 0 again")

    # A live uprobe holds payment-auth's semaphore: in use, never stale.
    tracer = subprocess.Popen(["bpftrace", "-p", str(pid), "-e", "usdt::billing:%s { @n = count(); }" % LIVE],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not probes(pid).get(LIVE, {}).get("traced"):
        time.sleep(0.1)
    live_value = probes(pid)[LIVE]["semaphore_value"]
    check(live_value >= 1, "bpftrace attached: %s semaphore %d" % (LIVE, live_value))
    rc, line, err = doctor(pid)
    check(line.startswith("OK") and "1 raised" in line and "none stale" in line,
          "a live bpftrace attachment is not reported stale: %s" % line)

    # A stale one beside it: only that one is reported and cleared.
    set_semaphore(pid, STALE, 3)
    rc, line, err = doctor(pid)
    check(line.startswith("WARN") and "1 stale" in line and STALE in line and LIVE not in line,
          "beside the live one, only the stale semaphore is reported: %s" % line)
    rc, line, err = doctor(pid, "--clear-stale")
    after = probes(pid)
    check(line.startswith("OK") and after[STALE]["semaphore_value"] == 0,
          "--clear-stale lowers the stale one: %s" % line)
    check(after[LIVE]["semaphore_value"] == live_value,
          "--clear-stale leaves the live uprobe's counter alone (%d, was %d)"
          % (after[LIVE]["semaphore_value"], live_value))
    bt.interrupt_bpftrace(tracer, 60)
    out, _ = tracer.communicate(timeout=30)
    tracer = None
    check("@n: " in out, "bpftrace still counted %s after the clearing" % LIVE)
    deadline = time.time() + 10
    while time.time() < deadline and probes(pid)[LIVE]["traced"]:
        time.sleep(0.1)
    check(probes(pid)[LIVE]["semaphore_value"] == 0, "bpftrace gone: its semaphore back to 0")
finally:
    bt.kill_all(tracer, prog)

rc, out, err = run(["doctor", "--clear-stale"])
check(rc == 2 and len(err.splitlines()) == 1 and "needs a PID" in err, "--clear-stale without a PID: exit 2 (%r)" % err)
finish()

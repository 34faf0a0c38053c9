"""billing-probes list PID: the traced column follows bpftrace.

Start the test program, list it (nothing traced), attach
`bpftrace -p PID` to one probe, list again (that probe traced, the
others not), stop bpftrace.  The program is a private copy
(bt.private_copy): a tracer attached to the build's file elsewhere would
raise its semaphores and write its sites in this process too.  Needs root
and bpftrace: skip otherwise."""
import json
import os
import sys
import subprocess
import tempfile
import time


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import FAST_SITE, PROGRAM, PROVIDER, catalogue, check, finish, need_probes, run, skip  # noqa: E402

N = len(catalogue())

need_probes()
bt.require_tracing()

PROBE = "payment__auth"
PRIVATE = tempfile.TemporaryDirectory(prefix="bp-tool-live-pid-")
PROGRAM = bt.private_copy(PROGRAM, PRIVATE.name)


def listing(pid):
    rc, out, err = run(["list", str(pid), "--json", "-P", "billing"])
    check(rc == 0, "list %d exits 0 (rc=%d %r)" % (pid, rc, err))
    doc = json.loads(out) if rc == 0 else {"probes": []}
    return doc, {p["name"]: p for p in doc["probes"]}


prog = subprocess.Popen([PROGRAM, "30"], stdout=subprocess.PIPE, text=True)
tracer = None
try:
    check(prog.stdout.readline().strip() == "ready", "test program started")
    doc, before = listing(prog.pid)
    check(doc["pid"] == prog.pid and len(before) == N, "all %d billing probes listed in PID %d" % (N, prog.pid))
    check(all(p["traced"] is False and p["semaphore_value"] == 0 for p in before.values()),
          "before bpftrace: no probe traced")
    exe = os.path.realpath(PROGRAM)
    check(all(os.path.realpath(p["module"]) == exe for p in before.values()), "the probes live in the executable")
    check(all(p["runtime_address"] and p["runtime_semaphore"] for p in before.values()),
          "run-time addresses of sites and semaphores resolved")
    rc, table, err = run(["list", str(prog.pid), "-n", PROBE])
    check(table.splitlines()[0].split()[:7] == ["MODULE", "PROVIDER", "NAME", "ADDRESS", "SEMAPHORE", "TRACED",
                                                "ARGUMENTS"] and " no " in table.splitlines()[1],
          "table for a PID has MODULE and TRACED columns, 'no' before attaching")

    tracer = subprocess.Popen(["bpftrace", "-p", str(prog.pid), "-e",
                               "usdt::billing:%s { @ = count(); }" % PROBE],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    attached = False
    deadline = time.time() + 60
    while time.time() < deadline:
        line = tracer.stdout.readline()
        if not line:
            break
        if "Attaching" in line:
            attached = True
            break
    if not attached:
        skip("bpftrace did not attach (kernel or permissions): " + (line or "").strip())
    # bpftrace raises the semaphore right after it prints "Attaching".
    for _ in range(50):
        doc, during = listing(prog.pid)
        if during.get(PROBE, {}).get("traced"):
            break
        time.sleep(0.1)
    check(during[PROBE]["traced"] is True and during[PROBE]["semaphore_value"] >= 1,
          "with bpftrace attached: %s traced (semaphore %s)" % (PROBE, during[PROBE]["semaphore_value"]))
    others = [n for n, p in during.items() if n != PROBE and p["traced"]]
    check(not others, "the other %d probes still untraced (%s)" % (N - 1, others))
    rc, table, err = run(["list", str(prog.pid), "-n", PROBE])
    check(" yes " in table.splitlines()[1], "table shows 'yes' in TRACED for %s" % PROBE)

    # What the kernel wrote at the attached site: int3, or a call/jmp
    # into the uprobe trampoline when it optimizes a 5-byte-nop site.
    optimizes = False
    try:
        optimizes = any(l.rstrip().endswith(" arch_uprobe_optimize") for l in open("/proc/kallsyms"))
    except OSError:
        pass
    nop = "5-byte nop" if FAST_SITE else "1-byte nop"
    attached_kind = "call/jmp (optimized uprobe attached)" if FAST_SITE and optimizes else "int3 (uprobe attached"
    site_line = ""
    for _ in range(50):
        rc, out, err = run(["doctor", "-p", str(prog.pid), "--provider", PROVIDER], timeout=60)
        site_line = [l for l in out.splitlines() if "probe sites:" in l]
        site_line = site_line[0] if site_line else ""
        if "1 x " + attached_kind in site_line:
            break
        time.sleep(0.1)
    check("%d x %s, 1 x %s" % (N - 1, nop, attached_kind) in site_line,
          "doctor -p sees the attached site: %s" % site_line)

    bt.interrupt_bpftrace(tracer, 60)
    tracer.communicate(timeout=30)
    tracer = None
    for _ in range(50):
        doc, after = listing(prog.pid)
        if not after[PROBE]["traced"]:
            break
        time.sleep(0.1)
    check(after[PROBE]["traced"] is False, "after bpftrace exits: %s untraced again" % PROBE)
    rc, out, err = run(["doctor", "-p", str(prog.pid), "--provider", PROVIDER], timeout=60)
    check("probe sites: %d x %s" % (N, nop) in out, "after bpftrace exits: every site a %s again" % nop)
finally:
    bt.kill_all(tracer, prog)
finish()

"""billing-probes doctor: one OK/WARN/FAIL line per check, exit 1 iff a
FAIL, and the target check on a program with and without probes."""
import os
import sys
import re
import subprocess


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tooltest import PROBES, PROGRAM, PROGRAM_DISABLED, PROVIDER, catalogue, check, finish, run  # noqa: E402

N = len(catalogue())

LINE = re.compile(r"^(OK  |WARN|FAIL)  ([a-zA-Z_ ]+): \S")


def doctor(args):
    rc, out, err = run(["doctor"] + args, timeout=60)
    lines = out.splitlines()
    check(lines and all(LINE.match(l) for l in lines), "doctor %s: every line is STATUS  name: finding" % args)
    fails = [l for l in lines if l.startswith("FAIL")]
    check(rc == (1 if fails else 0), "doctor %s: exit %d matches %d FAIL line(s)" % (args, rc, len(fails)))
    return rc, {LINE.match(l).group(2): l for l in lines if LINE.match(l)}


rc, lines = doctor([])
for name in ("kernel", "kernel uprobes", "kernel BPF", "tracefs", "privileges", "perf_event_paranoid",
             "bpftrace", "dtrace", "tracer", "optimized uprobes"):
    check(name in lines, "doctor reports %r" % name)
mounted = subprocess.run(["mountpoint", "-q", "/sys/kernel/tracing"]).returncode == 0
check(lines["tracefs"].startswith("OK") == mounted, "tracefs verdict matches mountpoint(1): %s" % lines["tracefs"])
if os.geteuid() == 0:
    check(lines["privileges"].startswith("OK"), "privileges OK as root: %s" % lines["privileges"])
rc_nobody, out_nobody, _ = run(["doctor"], timeout=60, user=65534) if os.geteuid() == 0 else (None, "", "")
if rc_nobody is not None:
    check(rc_nobody == 1 and re.search(r"^FAIL  privileges: uid 65534 without", out_nobody, re.M) is not None,
          "as nobody: privileges FAIL and exit 1 (%d)" % rc_nobody)
paranoid = open("/proc/sys/kernel/perf_event_paranoid").read().strip()
check("= %s" % paranoid in lines["perf_event_paranoid"], "perf_event_paranoid value read: %s" % paranoid)
bpftrace = subprocess.run(["sh", "-c", "bpftrace --version 2>/dev/null"], capture_output=True, text=True).stdout.strip()
if bpftrace:
    check(bpftrace in lines["bpftrace"], "bpftrace version as bpftrace says it: %s" % bpftrace)

if not PROBES:
    rc, lines = doctor(["--target", PROGRAM, "--provider", PROVIDER])
    check(rc == 1 and lines.get("target", "").startswith("FAIL"),
          "-Dprobes=disabled: doctor --target PROGRAM fails the target check")
    finish()
rc, lines = doctor(["--target", PROGRAM, "--provider", PROVIDER])
check(lines.get("target", "").startswith("OK") and "all %d probes" % N in lines["target"],
      "doctor --target PROGRAM: carries all %d probes" % N)
rc, lines = doctor([PROGRAM])
check(lines.get("target", "").startswith("OK") and "all %d probes of the built-in billing.d" % N in lines["target"],
      "doctor PROGRAM (positional, built-in catalogue): carries all %d probes" % N)
check(re.search(r"probe sites: \d+ x (1|5)-byte nop", lines.get("probe sites", "")) is not None,
      "doctor --target PROGRAM: probe sites are nops (%s)" % lines.get("probe sites"))
rc, lines = doctor(["--target", PROGRAM_DISABLED, "--provider", PROVIDER])
check(rc == 1 and lines.get("target", "").startswith("FAIL") and "%d of the %d" % (N, N) in lines["target"],
      "doctor --target on the no-probes build: FAIL, all %d missing, exit 1" % N)

prog = subprocess.Popen([PROGRAM, "10"], stdout=subprocess.PIPE, text=True)
try:
    prog.stdout.readline()
    rc, lines = doctor(["-p", str(prog.pid), "--provider", PROVIDER])
    check(lines.get("target", "").startswith("OK") and "PID %d carries all %d" % (prog.pid, N) in lines["target"],
          "doctor -p PID: carries all %d probes" % N)
    check(lines.get("semaphores", "").startswith("OK") and "none stale" in lines["semaphores"],
          "doctor -p PID: no stale semaphore (%s)" % lines.get("semaphores"))
finally:
    prog.kill()
    prog.wait()

for args, target in ((["-p", "999999999"], "999999999"), (["--target", "/etc/hostname"], "/etc/hostname"),
                     (["-p", "abc"], "abc")):
    rc, out, err = run(["doctor"] + args + ["--provider", PROVIDER])
    check(rc == 2 and len(err.splitlines()) == 1 and target in err, "doctor %s: exit 2, one line (%r)" % (args, err))
finish()

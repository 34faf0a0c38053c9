"""billing-probes trace on a service built the README's way
(tests/tool/shared_program.c: linked against the shared libbillingprobes.so,
transactions timed by the helpers in the library, invoices, payments,
refunds and errors fired in the executable), and on targets carrying none
of a script's probes.

- `--binary EXE --binary LIB`, in both orders: each probe attached where
  it lives; biz_metrics (the executable's probes) and tps (the library's)
  give the program's exact totals;
- `--binary EXE` alone for tps, `--binary LIB` alone for biz_metrics: they
  carry none of the script's probes: refused, exit 2, one line (naming the
  library EXE loads that carries them);
- another file at the same paths in another mount namespace (a chroot or
  container running its own build at the path): `--binary` attaches it too,
  and says so in one line per file (two Debian roots' services at one path
  read as one service's doubled figures, silently);
- `-p PID` of a process carrying no billing probe, two such `-p`, and `-c`
  of a program lacking the script's probes: refused at once, exit 2, one
  line (tps ran forever printing zeros); a script naming no USDT probe
  (cpu_profile) is not refused.

The program and its library traced are private copies (bt.private_copy):
--binary attaches to a file, so every process running it is seen, and no
other test's run of the build's files may be one of them.

Every wait is for a condition (a line printed) with a generous deadline.
Needs root and bpftrace (CI has both)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import (DEADLINE, check, expected, figures, finish, need_probes, run,  # noqa: E402
                      start_trace, stop_trace, wait_tps)

need_probes()
bt.require_tracing()

PRIVATE = tempfile.TemporaryDirectory(prefix="bp-tool-trace-binaries-")
SHARED = bt.private_copy(os.environ["BP_SHARED_PROGRAM"], PRIVATE.name)
SUBSET = os.environ["BP_SUBSET_PROGRAM"]  # refused before any tracer starts
LIB = bt.loaded_library(SHARED, "libbillingprobes.so")
check(LIB.startswith(os.path.realpath(PRIVATE.name) + os.sep), "the private copy loads its own library (%s)" % LIB)
ROUNDS = 9
ARGS = {"biz_metrics": ["1"], "tps": []}
START = {"biz_metrics": "Tracing billing business figures", "tps": "Tracing transactions per second"}


def specs(out):
    """{probe: {module realpath}} of the resolved script's USDT specs."""
    got = {}
    for path, name in re.findall(r"^usdt:(/\S*?):billing:(\w+)", out, flags=re.M):
        got.setdefault(name, set()).add(os.path.realpath(path))
    return got


def refused(rc, err, *words):
    return rc == 2 and len(err.splitlines()) == 1 and "refused" in err and all(w in err for w in words)


# --- resolution: each probe where it lives ------------------------------------------------
for script, probe, home in (("tps", "transaction__done", LIB), ("biz_metrics", "invoice__create", SHARED)):
    for order in ((SHARED, LIB), (LIB, SHARED)):
        rc, out, err = run(["trace", script, "--binary", order[0], "--binary", order[1], "--dry-run"])
        got = specs(out)
        check(rc == 0 and got.get(probe) == {os.path.realpath(home)} and "pid ==" not in out,
              "%s --binary %s --binary %s: %s attached in %s (%d %s %r)"
              % (script, os.path.basename(order[0]), os.path.basename(order[1]), probe, os.path.basename(home), rc,
                 got, err[-300:]))

rc, out, err = run(["trace", "tps", "--binary", SHARED, "--dry-run"])
check(refused(rc, err, "no module of", "transaction__done", "--binary", "libbillingprobes.so.0") and out == "",
      "tps --binary EXE alone: refused, one line naming the library it loads (%d %r)" % (rc, err))
rc, out, err = run(["trace", "biz_metrics", "--binary", LIB, "--dry-run"])
check(refused(rc, err, "no module of", "invoice__create") and out == "",
      "biz_metrics --binary LIB alone: refused, one line (%d %r)" % (rc, err))

# --- another file at the same paths, in another mount namespace: counted, and said -------------
OTHER = tempfile.TemporaryDirectory(prefix="bp-tool-trace-binaries-other-")
shutil.copytree(PRIVATE.name, OTHER.name, symlinks=True, dirs_exist_ok=True)
twin = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                         'mount --bind "$1" "$2" && exec "$3" 1 --wait', "twin", OTHER.name, PRIVATE.name, SHARED],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
try:
    check(twin.stdout.readline().strip() == "ready", "a copy runs at the same paths in a mount namespace of its own")
    rc, out, err = run(["trace", "tps", "--binary", SHARED, "--binary", LIB, "--dry-run"])
    said = [l for l in err.splitlines() if "another file at that path in the root of process %d" % twin.pid in l]
    paths = re.findall(r"^usdt:(/\S*?):billing:transaction__done", out, flags=re.M)
    check(rc == 0 and sorted(paths) == sorted([LIB, "/proc/%d/root%s" % (twin.pid, LIB)]) and len(said) == 2,
          "tps --binary EXE --binary LIB with the twin running: its library attached too, one line for each of its "
          "two files (%d %s %r)" % (rc, paths, err[-600:]))
finally:
    twin.kill()
    twin.wait()
    OTHER.cleanup()

# --- refused at once: targets without the script's probes -------------------------------------
idle = [subprocess.Popen(["sleep", "600"]) for _ in range(2)]
try:
    for pids in (idle[:1], idle):
        args = []
        for p in pids:
            args += ["-p", str(p.pid)]
        try:
            rc, out, err = run(["trace", "tps"] + args, timeout=60)
        except subprocess.TimeoutExpired:
            rc, out, err = None, "", "still running after 60 s"
        check(refused(rc, err, "no module of", "transaction__done") and out == "",
              "tps on %d process(es) without billing probes: refused at once, one line (%s %r)" % (len(pids), rc, err))
    rc, out, err = run(["trace", "cpu_profile", "-p", str(idle[0].pid), "--dry-run"])
    check(rc == 0 and "refused" not in err, "a script naming no USDT probe (cpu_profile) is not refused (%d %r)"
          % (rc, err))
finally:
    for p in idle:
        p.kill()
        p.wait()
rc, out, err = run(["trace", "tps", "-c", "%s 1" % SUBSET], timeout=60)
check(refused(rc, err, "no module of") and "fired" not in out,
      "tps -c on a program without transactions: refused, one line, the program never let run (%d %r)" % (rc, err))


# --- real runs: the program's exact totals ------------------------------------------------------
def traced_program(script, binaries):
    """trace SCRIPT --binary ... attached, then the program run ROUNDS
    rounds (started after attaching: every event of it is seen), then
    Ctrl-C; what the script counted."""
    target = []
    for b in binaries:
        target += ["--binary", b]
    tracer, lines = start_trace(script, target, ARGS[script])
    try:
        lines.wait_for(lambda l: l.startswith(START[script]), "%s to start" % script)
        prog = subprocess.run([SHARED, str(ROUNDS)], capture_output=True, text=True, timeout=DEADLINE)
        check(prog.returncode == 0 and "fired %d" % ROUNDS in prog.stdout, "the program ran its %d rounds" % ROUNDS)
        if script == "tps":
            wait_tps(lines, 2 * ROUNDS, "tps")
    except RuntimeError as e:
        check(False, "%s: %s" % (script, e))
    rc, out_lines, err = stop_trace(tracer, lines)
    return rc, figures(script, out_lines), err


for script in ("biz_metrics", "tps"):
    for order in ((SHARED, LIB), (LIB, SHARED)):
        rc, got, err = traced_program(script, order)
        check(rc == 0 and got == expected(script, ROUNDS),
              "%s --binary %s --binary %s: the program's exact totals (%s, want %s; rc %d %r)"
              % (script, os.path.basename(order[0]), os.path.basename(order[1]), got, expected(script, ROUNDS), rc,
                 err[-300:]))
finish()

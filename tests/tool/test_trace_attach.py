"""billing-probes trace: what bpftrace says it attached is checked, and its
host noise is not passed on.

bpftrace 0.27, given -p with a path-qualified USDT probe, attached the
probe twice ("Attached 9 probes" for biz_metrics' 6): every figure read
double, silently.  trace now gives bpftrace -p with unqualified probes,
and compares the count bpftrace prints ("Attaching N probes..." on stdout
through 0.23, one per site; "Attached N probes" on stderr from 0.24, one
per spec) with what the program asks for: any other count is refused in
one line, exit 2, nothing of the script shown.  A version outside the
tested three is named in one line; one that never says what it attached
is refused once its script prints; so is a run in which a map update
failed (bpftrace 0.23 loses a count when two CPUs add one new key at
once, and says so on stdout).  bpftrace's RLIMIT_MEMLOCK line
(meaningless from Linux 5.11) and 0.27's available_filter_functions line
are dropped; its other stderr lines pass.

A stand-in for bpftrace (BPFTRACE=...) says what each case needs; the real
runs on bpftrace 0.17, 0.23 and 0.27 are the scripts and tool-trace tests.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import TOOL, check, finish, need_probes  # noqa: E402

need_probes()

SUBSET = os.environ["BP_SUBSET_PROGRAM"]
MEMLOCK = ('WARNING: Unknown error -1: couldn\'t set RLIMIT_MEMLOCK for bpftrace. If your program is not loading, '
           'you can try "ulimit -l 8192" to fix the problem')
FILTER = ("WARNING: Could not read functions from /sys/kernel/tracing/available_filter_functions. If this is "
          "expected, use --traceable-functions to set this path manually.")

# VERSION, then what it prints before BEGIN: ATTACH_OUT on stdout (through
# 0.23), ATTACH_ERR on stderr (0.27), each possibly empty; then BEGIN's
# line, and it waits for SIGINT.  It records its arguments.
STAND_IN = '''#!%s
import os, select, signal, sys
if sys.argv[1:] == ["--version"]:
    print("bpftrace " + os.environ["STAND_IN_VERSION"])
    sys.exit(0)
open(os.environ["STAND_IN_ARGS"], "w").write("\\n".join(sys.argv[1:]))
stop = []
signal.signal(signal.SIGINT, lambda s, f: stop.append(s))
sys.stderr.write(%r + "\\n" + %r + "\\n" + "WARNING: a line of its own\\n")
sys.stderr.flush()
if os.environ["STAND_IN_ATTACH_OUT"]:
    print(os.environ["STAND_IN_ATTACH_OUT"], flush=True)
if os.environ["STAND_IN_ATTACH_ERR"]:
    sys.stderr.write(os.environ["STAND_IN_ATTACH_ERR"] + "\\n")
    sys.stderr.flush()
print("Tracing billing business figures every 1 s. Hit Ctrl-C to end.", flush=True)
if os.environ.get("STAND_IN_LOSE"):  # bpftrace 0.23: two CPUs added one new key at once
    print("an interval before it", flush=True)
    print("stdin:63:9-40: WARNING: File exists\\nAdditional Info - helper: map_update_elem, retcode: -17\\n"
          "    @payments[$label, (int32)arg4] = count();\\n    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~", flush=True)
if os.environ.get("STAND_IN_ZERO"):  # the same, on the sum(0) that makes a key (a tab shown as 4 spaces)
    print("stdin:74:35-41: WARNING: File exists\\nAdditional Info - helper: map_update_elem, retcode: -17\\n"
          "    @payments[$label, (int32)arg4] = sum(0); @payments[$label, (int32)arg4] = sum(1);\\n"
          "                                     ~~~~~~", flush=True)
poll = select.epoll()  # as bpftrace waits: trace stops it there
while not stop:
    poll.poll(0.05)
print("invoices 1", flush=True)
''' % (sys.executable, MEMLOCK, FILTER)


def trace(stand_in, tmp, version, attach_out="", attach_err="", script=("biz_metrics", "1"), lose=False,
          zero=False):
    """trace biz_metrics -p on a waiting subset_program (6 probes asked for:
    BEGIN, 3 USDT probes of one site each, interval, END); the program is
    let go once the launcher is running.  (exit, stdout, stderr, the
    stand-in's arguments)."""
    prog = subprocess.Popen([SUBSET, "1", "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    launcher = None
    args = os.path.join(tmp, "args")
    try:
        check(prog.stdout.readline().strip() == b"ready", "subset_program started")
        env = dict(os.environ, BPFTRACE=stand_in, STAND_IN_VERSION=version, STAND_IN_ARGS=args,
                   STAND_IN_ATTACH_OUT=attach_out, STAND_IN_ATTACH_ERR=attach_err, STAND_IN_LOSE="1" if lose else "",
                   STAND_IN_ZERO="1" if zero else "")
        script_args = [a.replace("PID", str(prog.pid)) for a in script[1:]]
        launcher = subprocess.Popen([TOOL, "trace", script[0], "-p", str(prog.pid), "--"] + script_args, env=env,
                                    text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        bt.wait_for("the stand-in started", lambda: os.path.exists(args), 30, 0.05)
        prog.stdin.write(b"go\n")
        prog.stdin.close()
        prog.wait(10)
        out, err = launcher.communicate(timeout=60)
        return launcher.returncode, out, err, open(args).read().split("\n")
    finally:
        for p in (launcher, prog):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if os.path.exists(args):
            os.unlink(args)


def lines(err):
    return [l for l in err.splitlines() if l.strip()]


with tempfile.TemporaryDirectory() as tmp:
    stand_in = os.path.join(tmp, "bpftrace")
    with open(stand_in, "w") as f:
        f.write(STAND_IN)
    os.chmod(stand_in, 0o755)

    # the counts each tested version gives for the 6 probes asked for
    for version, out_line, err_line in (("v0.17.0", "Attaching 6 probes...", ""),
                                        ("v0.23.2", "Attaching 6 probes...", ""),
                                        ("v0.27.1", "", "Attached 6 probes")):
        rc, out, err, argv = trace(stand_in, tmp, version, out_line, err_line)
        print("%s, the count asked for: exit %d\n%s%s" % (version, rc, out, err))
        check(rc == 0 and "Tracing billing" in out and "invoices 1" in out,
              "%s saying it attached the 6 probes asked for: its output shown, exit 0 (%d)" % (version, rc))
        check(lines(err) == ["WARNING: a line of its own"] + ([err_line] if err_line else []),
              "%s: RLIMIT_MEMLOCK and available_filter_functions dropped, its other stderr lines passed (%s)"
              % (version, lines(err)))
        check(argv[0] == "-p" and ("--no-warnings" in argv) == (version == "v0.27.1")
              and "usdt::billing:invoice__create" in "\n".join(argv) and "usdt:/" not in "\n".join(argv),
              "%s: -p with probes written without a path%s (%s)"
              % (version, ", --no-warnings" if version == "v0.27.1" else "", argv[:3]))

    # a script with tracepoints: no -p, whose filter (0.27: every action
    # kept to the process) would hide cswitch's switches into the process
    rc, out, err, argv = trace(stand_in, tmp, "v0.27.1", "", "Attached 5 probes", ("cswitch", "PID", "1"))
    check(rc == 0 and "-p" not in argv, "cswitch (tracepoints): bpftrace not given -p (%d %s)" % (rc, argv[:3]))

    # a doubled attachment, as bpftrace 0.27 made one: refused
    for version, out_line, err_line in (("v0.27.1", "", "Attached 9 probes"),
                                        ("v0.17.0", "Attaching 12 probes...", ""),
                                        ("v0.27.1", "", "Attached 3 probes")):
        rc, out, err, _ = trace(stand_in, tmp, version, out_line, err_line)
        print("%s, %s: exit %d\n%s%s" % (version, out_line or err_line, rc, out, err))
        refusal = [l for l in lines(err) if "refused:" in l]
        check(rc == 2 and "Tracing billing" not in out and "invoices" not in out and len(refusal) == 1
              and "attached %s probes where the program asks for 6" % (out_line or err_line).split()[1] in refusal[0],
              "%s saying %r: refused in one line, exit 2, nothing of the script shown (%d %r %r)"
              % (version, out_line or err_line, rc, out, refusal))

    # bpftrace 0.23 losing a count (its map update failed): what came before
    # is shown, nothing after, one refusal line, exit 2
    rc, out, err, _ = trace(stand_in, tmp, "v0.23.2", "Attaching 6 probes...", "", lose=True)
    refusal = [l for l in lines(err) if "refused:" in l]
    check(rc == 2 and "an interval before it" in out and "File exists" not in out and "invoices" not in out
          and len(refusal) == 1 and "failed to update a map 1 time" in refusal[0],
          "a failed map update (bpftrace 0.23's lost count): refused in one line, nothing after it shown (%d %r %r)"
          % (rc, out, refusal))

    # a failed sum(0), the scripts' making of a key: it lost nothing, the figures shown
    rc, out, err, _ = trace(stand_in, tmp, "v0.23.2", "Attaching 6 probes...", "", zero=True)
    check(rc == 0 and "invoices 1" in out and "File exists" not in out + err and "sum(0)" not in out + err
          and "refused" not in err, "a failed sum(0) (bpftrace 0.23 making a key two CPUs add at once) loses "
          "nothing: its warning dropped, the figures shown (%d %r %r)" % (rc, out, err))
    rc, out, err, _ = trace(stand_in, tmp, "v0.23.2", "Attaching 6 probes...", "", lose=True, zero=True)
    check(rc == 2 and "invoices" not in out and "failed to update a map 1 time" in err,
          "a failed count() beside a failed sum(0): refused, the one lost count said (%d %r)" % (rc, err))

    # a version outside the three: said in one line, its count still checked
    rc, out, err, _ = trace(stand_in, tmp, "v0.99.0", "", "Attached 6 probes")
    untested = [l for l in lines(err) if "untested" in l]
    check(rc == 0 and "invoices 1" in out and len(untested) == 1 and "bpftrace v0.99.0 is untested" in untested[0],
          "an untested version: one line names it, the figures shown once the count is right (%d %r)" % (rc, untested))
    rc, out, err, _ = trace(stand_in, tmp, "v0.99.0", "", "Attached 12 probes")
    check(rc == 2 and "invoices" not in out, "an untested version attaching twice: refused (%d %r)" % (rc, out))

    # doctor says the same of it
    env = dict(os.environ, BPFTRACE=stand_in, STAND_IN_VERSION="v0.99.0")
    doctor = subprocess.run([TOOL, "doctor"], env=env, capture_output=True, text=True, timeout=60).stdout
    line = [l for l in doctor.splitlines() if " bpftrace: " in l]
    check(line and line[0].startswith("WARN") and "v0.99.0: untested" in line[0],
          "doctor: an untested bpftrace is a warning that names it (%s)" % line)

    # no attach line at all: refused once the script prints
    rc, out, err, _ = trace(stand_in, tmp, "v0.17.0")
    check(rc == 2 and "Tracing billing" not in out and "did not say how many probes it attached" in err,
          "a bpftrace that never says what it attached: refused, nothing shown (%d %r %r)" % (rc, out, err))

finish()

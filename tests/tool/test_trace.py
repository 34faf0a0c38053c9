"""billing-probes trace: the shipped bpftrace scripts on any billing service.

Two services the scripts were not written for:
- subset_program: only invoice, payment and refund probes (its own module);
- two_module_program: request-start/done both in the executable (its own
  macros) and in libbillingprobes.so (the timing helpers), plus the
  helpers' transactions and an error of its own.
Each script is resolved for the process (--dry-run: specs the process
lacks dropped, one spec per module; a script none of whose probes the
process carries refused), then run for real with -c and with -p, and its
figures must equal what the program fired: exact counts and amounts, not
just "it started".  Needs root and bpftrace (CI has both).

    test_trace.py            resolution and figures (meson: tool-trace)
    test_trace.py --subset   every script starts and ends cleanly on the
                             subset service, with whole clauses dropped,
                             or is refused when it carries none of them
                             (meson: tool-trace-subset; it needs scripts
                             that stay valid when a clause is dropped)
    test_trace.py --pid-reuse
                             a traced PID reused by another process is not
                             counted (meson: tool-trace-pid-reuse; it sets
                             ns_last_pid, so it runs alone)

Each run traces private copies of the services (bt.private_copy): a
tracer attached to a file sees every process running it, so no other
test's run of the build's programs meets this one's.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import (DEADLINE, TOOL, Lines, biz_total, check, finish, fire_waiting, latency_total, need_probes,  # noqa: E402
                      readelf_names, run, tps_seconds, trace_attached, waiting_program)

need_probes()
bt.require_tracing()

PRIVATE = tempfile.TemporaryDirectory(prefix="bp-tool-trace-")
SUBSET = bt.private_copy(os.environ["BP_SUBSET_PROGRAM"], PRIVATE.name)
TWO = bt.private_copy(os.environ["BP_TWO_MODULE_PROGRAM"], PRIVATE.name)
LIB = bt.loaded_library(TWO, "libbillingprobes.so")
check(LIB.startswith(os.path.realpath(PRIVATE.name) + os.sep), "the private copy loads its own library (%s)" % LIB)
SCRIPTS = os.path.join(bt.SOURCE_ROOT, "d-scripts", "bpftrace")
ROUNDS = 7


def script_probes(name):
    """The usdt::billing:NAME probes a script names, comments stripped."""
    text = open(os.path.join(SCRIPTS, name + ".bt")).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return set(re.findall(r"usdt::billing:(\w+)", text))


def dropped(err):
    return set(re.findall(r"dropped usdt::billing:(\w+): no module of", err))


def trace_c(script, program, args=(), rounds=ROUNDS):
    t0 = time.time()
    rc, out, err = run(["trace", script, "-c", "%s %d" % (program, rounds), "--"] + list(args), timeout=120)
    print("  (%s -c %s: %.1f s)" % (script, os.path.basename(program), time.time() - t0))
    return rc, out, err


def trace_p(script, program, args=(), rounds=ROUNDS):
    """Start PROGRAM --wait, attach trace -p, wait until the semaphores are
    raised (list PID says traced) and the script's BEGIN line is out (bpftrace
    runs BEGIN once every probe is attached: the first raised semaphore
    says only that one is), let it fire, return trace's result."""
    prog = subprocess.Popen([program, str(rounds), "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    tracer = None
    try:
        prog.stdout.readline()
        tracer = subprocess.Popen([TOOL, "trace", script, "-p", str(prog.pid), "--"] + list(args),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        attached = False
        while time.time() < deadline and not attached and tracer.poll() is None:
            rc, listing, _ = run(["list", str(prog.pid), "--json", "-P", "billing"])
            attached = rc == 0 and any(p["traced"] for p in json.loads(listing)["probes"])
            time.sleep(0.1)
        check(attached, "%s -p: bpftrace attached (semaphores raised) within 60 s" % script)
        head = ""
        while True:
            line = tracer.stdout.readline()  # bpftrace's "Attaching N probes...", then BEGIN's
            head += line
            if not line or not line.startswith("Attaching "):
                break
        prog.stdin.write("go\n")
        prog.stdin.flush()
        prog.wait(timeout=60)
        out, err = tracer.communicate(timeout=60)
        return tracer.returncode, head + out, err
    finally:
        for p in (tracer, prog):
            if p and p.poll() is None:
                p.kill()
                p.wait()


subset_carries = readelf_names(SUBSET)
two_carries = readelf_names(TWO) | readelf_names(LIB)


def refused(rc, err):
    """A trace whose targets carry none of the script's probes: exit 2, one line."""
    return rc == 2 and len(err.splitlines()) == 1 and "refused: no module of" in err


if "--subset" in sys.argv[1:]:
    for script, args in (("biz_metrics", ["1"]), ("tps", []), ("slow_requests", ["1"]),
                         ("request_latency", ["1", "1"]), ("amount_dist", []), ("errors", ["1"])):
        rc, out, err = trace_c(script, SUBSET, args)
        if not script_probes(script) & subset_carries:
            check(refused(rc, err) and "fired" not in out,
                  "%s -c on the subset service, which carries none of its probes: refused (%d %r)" % (script, rc, err))
            continue
        errors = [l for l in err.splitlines() if "ERROR" in l and "RLIMIT_MEMLOCK" not in l]
        check(rc == 0 and "fired %d" % ROUNDS in out and dropped(err) == script_probes(script) - subset_carries,
              "%s -c on the subset service starts and ends cleanly, its absent probes dropped (%d %s)"
              % (script, rc, errors[:3]))
    finish()

# --- a traced PID is the process, not the number --------------------------------------
# trace -p A -p B; B fires and exits; the next process made gets B's PID
# (ns_last_pid set to B - 1 just before it forks) and fires too: only A's
# and B's rounds count, and the trace ends when A ends.


def subset_waiting():
    return waiting_program(SUBSET, ROUNDS)


if "--pid-reuse" in sys.argv[1:]:
    a, b, reused, tracer = subset_waiting(), subset_waiting(), None, None
    try:
        tracer, head = trace_attached(["biz_metrics", "-p", str(a.pid), "-p", str(b.pid), "--", "1"])
        fire_waiting(b)
        for _ in range(20):
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(b.pid - 1))
            reused = subset_waiting()
            if reused.pid == b.pid:
                break
            reused.kill()
            reused.wait()
            reused = None
        check(reused is not None, "a process got the traced PID %d after its owner exited" % b.pid)
        if reused:
            fire_waiting(reused)
        fire_waiting(a)
        out, err = tracer.communicate(timeout=60)
        rows = biz_total(head + out)
        check(tracer.returncode == 0 and rows.get(("invoices", 0)) == (2 * ROUNDS, 2 * ROUNDS * 1250),
              "trace -p A -p B: B's PID reused by another process, not counted: %d invoices of A and B (%d %s %r)"
              % (2 * ROUNDS, tracer.returncode, rows.get(("invoices", 0)), err[-300:]))
    finally:
        for p in (a, b, reused, tracer):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    finish()

# --- resolution (--dry-run) ---------------------------------------------------------
for name in ("biz_metrics", "tps", "request_latency", "slow_requests", "amount_dist", "errors"):
    wanted = script_probes(name)
    for program, carries in ((SUBSET, subset_carries), (TWO, two_carries)):
        rc, out, err = run(["trace", name, "-c", program, "--dry-run"], timeout=60)
        if not wanted & carries:
            check(refused(rc, err) and out == "", "%s on %s, which carries none of its probes: refused, one line (%d %r)"
                  % (name, os.path.basename(program), rc, err))
            continue
        specs = re.findall(r"^usdt:(\S*?):billing:(\w+)", out, flags=re.M)
        check(len(re.findall(r"dropped usdt::", err)) == len(dropped(err)),
              "%s on %s: one line per dropped probe" % (name, os.path.basename(program)))
        check(rc == 0 and dropped(err) == wanted - carries,
              "%s on %s: dropped exactly the probes it lacks %s (%d %r)"
              % (name, os.path.basename(program), sorted(wanted - carries), rc, err[-300:]))
        # one process whose probes each sit in one module: bpftrace gets -p
        # and finds them itself (the specs name no module: bpftrace 0.27
        # attaches a probe twice when given both); else each names its module
        by_pid = out.startswith("/* billing-probes trace: for bpftrace -p ")
        paths = {bool(path) for path, _ in specs}
        check((paths == {False} if by_pid else all(path.startswith("/") for path, _ in specs))
              and {n for _, n in specs} == wanted & carries,
              "%s on %s: every kept spec names its module, or none for bpftrace -p (%s)"
              % (name, os.path.basename(program), "-p" if by_pid else "paths"))
        check(by_pid == (program == SUBSET or not wanted & carries & {"request__start", "request__done"}),
              "%s on %s: bpftrace -p exactly where no probe sits in two modules" % (name, os.path.basename(program)))
rc, out, err = run(["trace", "request_latency", "-c", TWO, "--dry-run"])
modules = {os.path.realpath(p) for p, n in re.findall(r"^usdt:(\S*?):billing:(\w+)", out, flags=re.M)
           if n == "request__done"}
check(modules == {os.path.realpath(TWO), LIB},
      "request-done in two modules: one spec for each (%s)" % sorted(modules))
# The scanner on a script of awkward shapes: braces and slashes inside a
# string and comments, a predicate of its own, a glob, a path spec.
with tempfile.TemporaryDirectory() as tmp:
    odd = os.path.join(tmp, "odd.bt")
    with open(odd, "w") as f:
        f.write('#!/usr/bin/env bpftrace\n'
                'BEGIN { printf("{ not a block \\"/\\" }\\n"); }\n'
                '// usdt::billing:error { }\n'
                'usdt::billing:request__done,\nusdt::billing:request__start\n/arg0 > 0/\n'
                '{ @[str(arg1)] = count(); /* } */ }\n'
                'usdt::billing:payment__auth { @p = count(); }\n'
                'usdt::billing:request__* { @all = count(); }\n'
                'uprobe:/bin/true:main /pid > 0/ { }\n')
    rc, out, err = run(["trace", odd, "-c", TWO, "--dry-run"])
    pid_filter = re.findall(r"/\(pid == (\d+) && curtask->group_leader->start_boottime / \d+ == \d+\)", out)
    check(rc == 0 and 'printf("{ not a block \\"/\\" }\\n")' in out and "// usdt::billing:error { }" in out
          and "{ @[str(arg1)] = count(); /* } */ }" in out, "string, comments and body pass through unchanged")
    check(len(pid_filter) == 2 and re.search(r"/\(pid == \d+ && [^()]*\) && \(arg0 > 0\)/", out),
          "the pid predicate is anded with the clause's own (%s)" % pid_filter)
    glob = out.split("/* dropped")[1].split("{ @all")[0] if "/* dropped" in out else ""
    check(len(re.findall(r"^usdt:/", glob, flags=re.M)) == 4,
          "usdt::billing:request__* expands to both request probes in both modules")
    check("uprobe:/bin/true:main /pid > 0/ { }" in out and dropped(err) == {"payment__auth"},
          "a path spec passes through; the clause of an absent probe is dropped")

rc, out, err = run(["trace", os.path.join(SCRIPTS, "tps.bt"), "-c", TWO, "--dry-run"])
check(rc == 0 and "transaction__done" in out, "a script given by path resolves too")
for args, why in ((["trace", "no_such_script", "-c", TWO], "no such script"),
                  (["trace", "tps"], "give -p PID"),
                  (["trace", "tps", "-p", "1", "-c", TWO], "give -p PID"),
                  (["trace", "tps", "-p", "999999999"], "no such process"),
                  (["trace", "tps", "-c", "/nonexistent/program"], "cannot run it")):
    rc, out, err = run(args, timeout=60)
    check(rc == 2 and len(err.splitlines()) == 1 and why in err, "%s: exit 2, one line %r (%d %r)" % (args, why, rc, err))

# --- real runs: the subset service ------------------------------------------------
# A round fires 1 invoice (1250 EUR), 1 approved payment (1999), 1 declined
# (250000, code 51), 1 refund (500).
for how in ("-c", "-p"):
    rc, out, err = trace_c("biz_metrics", SUBSET, ["1"]) if how == "-c" else \
        trace_p("biz_metrics", SUBSET, ["1"])
    rows = biz_total(out)
    check(rc == 0 and rows == {("invoices", 0): (ROUNDS, ROUNDS * 1250), ("approved", 0): (ROUNDS, ROUNDS * 1999),
                               ("declined", 51): (ROUNDS, ROUNDS * 250000), ("refunds", 0): (ROUNDS, ROUNDS * 500)},
          "biz_metrics %s on the subset service: exact counts and amounts (%d %s %r)" % (how, rc, rows, err[-300:]))

# --- real runs: probes in two modules ------------------------------------------------
# A round: a request through the helpers (library), one through the macros
# (executable, 2 ms), a 700 EUR payment transaction (helpers), one error.
for how in ("-c", "-p"):
    rc, out, err = trace_c("request_latency", TWO, ["1", "1"]) if how == "-c" else \
        trace_p("request_latency", TWO, ["1", "1"])
    handlers = latency_total(out)
    check(rc == 0 and handlers.get("helper.req") == (ROUNDS, 0) and handlers.get("macro.req") == (ROUNDS, ROUNDS),
          "request_latency %s, request-done in two modules: %d helper requests (library) and %d macro ones, "
          "all 2 ms macro requests slow (%d %s %r)" % (how, ROUNDS, ROUNDS, rc, handlers, err[-300:]))

rc, out, err = trace_c("tps", TWO)
seconds = tps_seconds(out)
check(rc == 0 and sum(s[0] for s in seconds) == ROUNDS and sum(s[1] for s in seconds) == 0,
      "tps -c: the library's transactions counted exactly, none failed (%d %s)" % (rc, seconds))

rc, out, err = trace_c("errors", TWO, ["1"])
tot = out.split("TOTAL since start", 1)[-1]
errs = {(c, int(code)): int(n) for c, code, n in re.findall(r"^@errors_total\[(\w+), (\d+)\]: (\d+)$", tot, flags=re.M)}
check(rc == 0 and errs == {("validation", 22): ROUNDS}, "errors -c: exact count (%d %s)" % (rc, errs))

rc, out, err = trace_c("amount_dist", TWO)
# stats(): "count N, average A, total S" (bpftrace 0.17, 0.23), "{ .count = N, ... }" (0.27)
stats = re.search(r"@stats_minor\[EUR, payment\]: (?:count |\{ \.count = )(\d+), \.?average =? ?\d+, "
                  r"\.?total =? ?(\d+)", out)
bucket = re.search(r"^@amount_minor\[EUR, payment, 512\]: (\d+)$", out, re.M)  # the bucket [512, 1K)
check(rc == 0 and stats and int(stats.group(1)) == ROUNDS and int(stats.group(2)) == ROUNDS * 700
      and bucket and int(bucket.group(1)) == ROUNDS,
      "amount_dist -c: %d payments of 700 EUR in the [512, 1K) bucket, sum exact (%d)" % (ROUNDS, rc))

# slow_requests prints one trail a millisecond after its request ends, and
# bpftrace 0.17 drops what it has not read yet when SIGINT comes: the
# program lingers (stdin open) until every trail is out, then trace ends.
tracer = subprocess.Popen([TOOL, "trace", "slow_requests", "-c", "%s %d --linger" % (TWO, ROUNDS), "--", "1"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
lines = Lines(tracer.stdout)
try:
    for n in range(ROUNDS):  # a trail's last line: its request-done
        lines.wait_for(lambda l: "  request-done  " in l, "slow_requests -c: trail %d of %d printed" % (n + 1, ROUNDS))
except RuntimeError as e:
    print(e)
tracer.stdin.close()
try:
    tracer.wait(timeout=DEADLINE)
except subprocess.TimeoutExpired:
    tracer.kill()
    tracer.wait()
rc, out, err = tracer.returncode, "\n".join(lines.rest()), tracer.stderr.read()
trails = re.findall(r"^SLOW REQUEST (\d+) (\S+)", out, flags=re.M)
queued = re.search(r"(\d+) slow trails? still queued", out)
queued = int(queued.group(1)) if queued else 0
check(rc == 0 and len(trails) + queued == ROUNDS and all(h == "macro.req" for _, h in trails)
      and "error               component=validation code=22" in out,
      "slow_requests -c: the %d slow (2 ms) macro requests, trails with their error (%d printed + %d queued)%s"
      % (ROUNDS, len(trails), queued, "" if len(trails) + queued == ROUNDS else "\n" + out + err))

# Without lingering: the program exits as its last requests end, and trace
# stops bpftrace only once the queue of trails has printed (its output quiet
# for BP_BPFTRACE_QUIET_MS), so every trail prints and none is left queued.
rc, out, err = trace_c("slow_requests", TWO, ["1"])
trails = re.findall(r"^SLOW REQUEST (\d+) (\S+)", out, flags=re.M)
check(rc == 0 and len(trails) == ROUNDS and "still queued" not in out,
      "slow_requests -c, the program exiting at once: all %d trails printed, none left queued (%d)%s"
      % (ROUNDS, len(trails), "" if len(trails) == ROUNDS else "\n" + out + err))
finish()

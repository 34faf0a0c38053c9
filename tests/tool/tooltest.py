"""What the billing-probes tool tests share beyond tests/lib/billingtest.py:
the paths meson passes (tests/tool/meson.build) and running the tool.

BP_TOOL, BP_PROGRAM (every probe, fired by the generated or hand-written
test program), BP_PROGRAM_DISABLED (the same without probes), BP_LIB_ALL
(the FFI library: every probe), BP_LIB_HELPERS (libbillingprobes.so: the
timing helpers' probes), BP_PROBES (1 when the build has probes),
BP_FAST_SITE (1 for -Dprobe_site=fast: 5-byte nop sites).  The catalogue
is billing.d, read by billingtest.provider_probes(), never a number here.
"""
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
# what every tool test uses, from the one test library
check, finish, skip, tps_seconds = bt.check, bt.finish, bt.skip, bt.tps_seconds

TOOL = os.environ.get("BP_TOOL", "")
PROVIDER = os.environ.get("BP_PROVIDER", bt.PROVIDER_D)
PROGRAM = os.environ.get("BP_PROGRAM", "")
PROGRAM_DISABLED = os.environ.get("BP_PROGRAM_DISABLED", "")
LIB_ALL = os.environ.get("BP_LIB_ALL", "")
LIB_HELPERS = os.environ.get("BP_LIB_HELPERS", "")
PROBES = os.environ.get("BP_PROBES", "0") == "1"
FAST_SITE = os.environ.get("BP_FAST_SITE", "0") == "1"


def need_probes():
    if not PROBES:
        skip("this build has no probes (-Dprobes=disabled or no dtrace/sys/sdt.h)")


def run(args, timeout=20, user=None, env=None):
    """Run the tool (env: its whole environment, None for ours); returns
    (exit status, stdout, stderr).  A signal death is a negative status
    (subprocess convention)."""
    cmd = [TOOL] + list(args)
    if user is not None:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def catalogue(path=None):
    """(provider, ELF name) -> argument count, from billing.d read by
    billingtest's own parser (independent of the tool's)."""
    return {(prov, bt.elf_name(name)): len(args)
            for prov, name, args in bt.provider_probes(path or PROVIDER)}


def readelf_names(path):
    """ELF probe names in a file's notes, as readelf -n prints them."""
    out = subprocess.run(["readelf", "-n", "--wide", path], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"Name: (\S+)", out))


def biz_total(text):
    """biz_metrics' TOTAL as {(metric, code): (count, amount_minor)}, over
    every currency and gateway: invoices, approved and refunds with code 0,
    declined with its one decline code (several: a "codes" entry instead);
    None when there is no TOTAL or its summary and rows disagree."""
    if "TOTAL since start" not in text:
        return None
    tot = text.split("TOTAL since start", 1)[1]
    inv = re.search(r"^invoices (\d+)$", tot, flags=re.M)
    pay = re.search(r"^payments approved (\d+) declined (\d+)", tot, flags=re.M)
    ref = re.search(r"^refunds (\d+)$", tot, flags=re.M)
    if not (inv and pay and ref):
        return None
    amounts, codes = {}, {}
    for metric, n in re.findall(r"^@amount_minor_total\[[^,\]]+, (\w+)\]: (\d+)$", tot, flags=re.M):
        amounts[metric] = amounts.get(metric, 0) + int(n)
    for code, n in re.findall(r"^@payments_total\[[^,\]]+, (\d+)\]: (\d+)$", tot, flags=re.M):
        codes[int(code)] = codes.get(int(code), 0) + int(n)
    approved, declined = int(pay.group(1)), int(pay.group(2))
    got = {("invoices", 0): (int(inv.group(1)), amounts.get("invoices", 0)),
           ("approved", 0): (approved, amounts.get("approved", 0)),
           ("refunds", 0): (int(ref.group(1)), amounts.get("refunds", 0))}
    decline_codes = [c for c in codes if c != 0]
    if codes.get(0, 0) != approved or sum(codes[c] for c in decline_codes) != declined:
        return None
    if len(decline_codes) == 1:
        got[("declined", decline_codes[0])] = (declined, amounts.get("declined", 0))
    elif declined:
        got["codes"] = codes
    return got


def latency_total(text):
    """request_latency's TOTAL table: {HANDLER: (COUNT, SLOW)}."""
    tot = text.split("TOTAL since start", 1)[-1].split("\nUNMEASURED", 1)[0]
    return {h: (int(n), int(slow)) for h, n, slow in re.findall(r"^(\S+)\s+(\d+)\s+(\d+)(?:\s|$)", tot, flags=re.M)}


# --- trace runs, started and stopped as a person would -------------------------------
DEADLINE = 120  # seconds for any one condition: ten times what a slow machine needs


def waiting_program(program, rounds):
    """PROGRAM (tests/tool's subset_program or a copy) started with --wait:
    it has said "ready" and fires ROUNDS rounds at fire_waiting()."""
    p = subprocess.Popen([program, str(rounds), "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    return p


def fire_waiting(p):
    """Lets a waiting_program() fire, and waits for it to end."""
    p.stdin.write("go\n")
    p.stdin.flush()
    p.wait(timeout=60)


def Lines(stream):
    """The child's output, line by line (billingtest.Lines), DEADLINE per wait."""
    return bt.Lines(stream, DEADLINE)


def start_trace(script, target_args, script_args):
    tracer = subprocess.Popen([TOOL, "trace", script] + target_args + ["--"] + script_args,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return tracer, Lines(tracer.stdout)


def trace_attached(args):
    """billing-probes trace ARGS started, read until bpftrace's "Attaching"
    lines are over: (the process, what it printed so far)."""
    tracer = subprocess.Popen([TOOL, "trace"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    head = ""
    while True:
        line = tracer.stdout.readline()
        head += line
        if not line or not line.startswith("Attaching "):
            return tracer, head


def stop_trace(tracer, lines):
    """SIGINT to trace (passed on to bpftrace: it prints END), as Ctrl-C."""
    tracer.send_signal(signal.SIGINT)
    try:
        tracer.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        tracer.kill()
        tracer.wait()
    return tracer.returncode, lines.rest(), tracer.stderr.read()


def wait_tps(lines, want, what):
    """tps prints each second once it is over (a stalled timer catches up),
    but its END skips seconds a stalled timer has not printed yet: wait
    until the printed seconds hold every transaction before stopping it."""
    got = 0
    while got < want:
        line = lines.wait_for(lambda l: tps_seconds(l), "%s: tps lines up to %d transactions (%d)"
                              % (what, want, got))
        got += tps_seconds(line)[0][0]


def expected_biz(rounds):
    """biz_metrics' TOTAL after rounds rounds of a test service (prefork_service.c,
    shared_program.c): 1 invoice (1250 EUR), 1 approved payment (1999), 1
    declined (250000, code 51), 1 refund (500)."""
    return {("invoices", 0): (rounds, rounds * 1250), ("approved", 0): (rounds, rounds * 1999),
            ("declined", 51): (rounds, rounds * 250000), ("refunds", 0): (rounds, rounds * 500)}


def figures(script, lines):
    """What the script counted, in one comparable shape: tps's seconds
    summed, errors' and biz_metrics' TOTAL."""
    if script == "tps":
        secs = tps_seconds("\n".join(lines))
        return (sum(s[0] for s in secs), sum(s[1] for s in secs))
    text = "\n".join(lines)
    if "TOTAL since start" not in text:
        return None
    tot = text.split("TOTAL since start", 1)[1]
    if script == "errors":
        return {(c, int(code)): int(n) for c, code, n in re.findall(r"@errors_total\[(\w+), (\d+)\]: (\d+)", tot)}
    return biz_total(text)


def expected(script, rounds):
    """figures() after rounds rounds of a test service: a round also fires
    two transactions (one failed) and one error (validation, 22)."""
    if script == "biz_metrics":
        return expected_biz(rounds)
    if script == "tps":
        return (2 * rounds, rounds)
    return {("validation", 22): rounds}

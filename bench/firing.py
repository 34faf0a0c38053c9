"""Firing bench/fire_loop untraced and under bpftrace, and the statistics
of repeated runs: shared by run_bench.py's traced part and by
exporter_bench.py (which compares its own program against these)."""
import re
import statistics
import subprocess
import time


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def summary(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "runs": values}


# bpftrace programs of the per-fire measurement: the smallest useful one,
# and one doing a biz_metrics-like aggregation (the shipped scripts need -p
# to resolve usdt::billing:, and fire_loop is started with -c).
TRACED_PROGRAMS = {
    "count": "usdt:{bin}:billing:payment__auth {{ @fires = count(); }}",
    "biz_metrics-like": ("usdt:{bin}:billing:payment__auth {{ @auths[str(arg2), str(arg3), arg4] = count(); "
                         "@amount_minor[str(arg2), str(arg3)] = sum(arg1); }}"),
}


def fire_once(binary, n, script=None):
    """(ns per fire, seconds from bpftrace launch to the program running)."""
    launched = time.time_ns()
    if script:
        r = run(["bpftrace", "-e", script.format(bin=binary), "-c", f"{binary} {n}"], timeout=600)
    else:
        r = run([binary, str(n)])
    m = re.search(r"started_at_ns=(\d+) traced=(\d) fires=\d+ ns_per_fire=([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"{binary} ({'traced' if script else 'untraced'}): {r.stdout[-300:]} {r.stderr[-300:]}")
    if script and m.group(2) != "1":
        raise RuntimeError(f"{binary}: ran under bpftrace but its probe was not enabled")
    return float(m.group(3)), (int(m.group(1)) - launched) / 1e9


def optimized_fires(binary, n):
    """How many of N fires took the optimized path: the kernel's trampoline
    enters through the uprobe syscall (x86-64 number 336), an int3 does not."""
    prog = ("usdt:%s:billing:payment__auth { @fires = count(); } "
            "tracepoint:raw_syscalls:sys_enter /pid == cpid && args->id == 336/ { @uprobe_syscalls = count(); }"
            % binary)
    r = run(["bpftrace", "-e", prog, "-c", f"{binary} {n}"], timeout=300)
    fires = re.search(r"@fires: (\d+)", r.stdout)
    calls = re.search(r"@uprobe_syscalls: (\d+)", r.stdout)
    return {"fires": int(fires.group(1)) if fires else 0,
            "through_uprobe_syscall": int(calls.group(1)) if calls else 0}

"""What the function-site tests share: the probes' function names, the
programs built with -O2 -flto by gcc and clang, the symbols a pid provider
finds, and Oracle's DTrace run under a timeout that cleans up after itself.

A function probe site is the entry of billing_fire_<probe>() (lib/
function_site.h, docs/function-sites.md); DTrace reaches it as
pid$target::billing_fire_<probe>:entry with the probe's arguments as arg0...
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import billingtest as bt  # noqa: E402

UPROBE_EVENTS = os.path.join(bt.TRACEFS, "uprobe_events")


def site_function(d_name):
    """payment-auth -> billing_fire_payment_auth."""
    return "billing_fire_" + d_name.replace("-", "_")


def site_symbols(binary):
    """{billing_fire_* name: address} of the functions BINARY defines."""
    out = bt.run(["nm", "--defined-only", binary]).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2].startswith("billing_fire_") and f[1] in "Tt":
            syms[f[2]] = int(f[0], 16)
    return syms


def site_bodies(binary):
    """{billing_fire_* name: [mnemonics up to the first ret]}: what an
    untraced call executes inside the site."""
    dis = bt.run(["objdump", "-d", "--no-show-raw-insn", binary], timeout=120).stdout
    bodies = {}
    for name, body in re.findall(r"<(billing_fire_\w+)>:\n(.*?)(?:\n\n|\Z)", dis, re.S):
        insns = []
        for line in body.splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[1].strip():
                insns.append(parts[1].split()[0])
                if insns[-1].startswith("ret"):
                    break
        bodies[name] = insns
    return bodies


def called_sites(binary):
    """Names of the billing_fire_* functions some instruction calls or jumps to."""
    dis = bt.run(["objdump", "-d", "--no-show-raw-insn", binary], timeout=120).stdout
    return set(re.findall(r"\s(?:call|jmp)q?\s+[0-9a-f]+ <(billing_fire_\w+)>", dis))


def lto_programs(sources, includes, defines, workdir):
    """SOURCES linked with -O2 -flto by each compiler that can: gcc, and
    clang through gold's LLVM plugin (GNU ld cannot link LLVM bitcode; lld
    can, but Oracle's DTrace does not attach to an lld-linked executable,
    whose file offsets differ from its addresses: docs/function-sites.md).
    [(label, path)], and [(label, error)] for those that failed to build."""
    built, failed = [], []
    compilers = [("gcc -O2 -flto", ["gcc"])]
    if shutil.which("clang") and shutil.which("ld.gold"):
        compilers.append(("clang -O2 -flto", ["clang", "-fuse-ld=gold"]))
    for label, cc in compilers:
        if not shutil.which(cc[0]):
            continue
        out = os.path.join(workdir, label.split()[0] + "-lto")
        # BILLING_STATS_DISABLE: function sites only, as function_sites_dep
        # builds them, in a -Dstats=enabled build too.
        cmd = cc + ["-std=c99", "-O2", "-flto", "-D_POSIX_C_SOURCE=200809L", "-DBILLING_STATS_DISABLE",
                    *("-D" + d for d in defines), *("-I" + i for i in includes),
                    *sources, "-o", out]
        r = bt.run(cmd, timeout=300)
        if r.returncode != 0:
            failed.append((label, r.stderr.strip()[-2000:]))
        else:
            built.append((label, out))
    return built, failed


def d_literal(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


D_FORMATS = {  # probe_samples.json's argument types -> printf format, D cast
    "uint64": ("%u", "(unsigned long long)arg%d"),
    "int64": ("%d", "(long long)arg%d"),
    "int32": ("%d", "(int)arg%d"),
    "string": ("%s", "copyinstr(arg%d)"),
}


def print_clause(d_name, arg_types, pid="$target"):
    """A D clause printing one probe's arguments as NAME|arg0|arg1... from its
    function site; ARG_TYPES as probe_samples.json names them."""
    fmt, vals = ["%s"], [d_literal(d_name)]
    for i, t in enumerate(arg_types):
        f, v = D_FORMATS[t]
        fmt.append(f)
        vals.append(v % i)
    return 'pid%s::%s:entry\n{\n\tprintf("%s\\n", %s);\n}\n' % (
        pid, site_function(d_name), "|".join(fmt), ", ".join(vals))


def remove_uprobes_of(dtrace_pid):
    """Oracle's DTrace names its uprobes dt_<its pid>_*; a dtrace that was
    killed leaves them behind.  Removes only those of DTRACE_PID."""
    try:
        with open(UPROBE_EVENTS) as f:
            lines = f.read().splitlines()
    except OSError:
        return
    prefix = "dt_%d_" % dtrace_pid
    for line in lines:
        m = re.match(r"[pr]:(\S+?)/(\S+)\s", line)
        if m and m.group(1).startswith(prefix):
            try:
                with open(UPROBE_EVENTS, "a") as f:
                    f.write("-:%s/%s\n" % (m.group(1), m.group(2)))
            except OSError:
                pass


class Dtrace:
    """One dtrace process: dtrace -q [OPTIONS] -s SCRIPT plus ARGS (-c CMD or
    -p PID, then $1...), output to a file.  stop() ends it like Ctrl-C; a
    dtrace that does not end is killed, and the uprobes it leaves are
    removed."""

    def __init__(self, exe, script_path, args, options=()):
        self.out = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen([exe, "-q", *options, "-s", script_path, *args],
                                     stdout=self.out, stderr=subprocess.STDOUT)

    def output_bytes(self):
        return bt.written(self.out, binary=True)

    def output(self):
        return self.output_bytes().decode(errors="replace")

    def wait_for(self, text, timeout):
        """True once TEXT is in the output (False: exited or timed out)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.proc.poll() is not None:
                return text in self.output()
            time.sleep(0.05)
        return False

    def stop(self, timeout=60, interrupt=True):
        """SIGINT (END clauses run) unless it already exited; then (exit code, output)."""
        try:
            if interrupt and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        remove_uprobes_of(self.proc.pid)
        return self.proc.returncode, self.output()

"""The scripts tests' cases for the system views: cswitch, syscalls,
file_opens, io_bytes, page_faults, cpu_profile, and bpftrace's dry run of
every twin (test_scripts.py runs them; expected.py holds their figures).
"""
import json
import os
import re
import struct
import subprocess
import tempfile

import scriptstest as S
from scriptstest import BT_SCRIPTS, TIMEOUT, bt, hist, require, run, scalar_map, side_by_side, total_table
import expected as X
from fold_stacks import fold  # the folder SREs run, tested here


SYSTEM_VIEWS = {"cswitch": [1], "syscalls": [], "file_opens": [], "io_bytes": [1],
                "page_faults": [1], "cpu_profile": []}


def case_system():
    """The system views, all on one workload (sane lower bounds)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "workload.dat")
        views = [(n, n, a, True) for n, a in SYSTEM_VIEWS.items()]
        stop = ["cpu_profile", "page_faults"]
        if S.TRACER.dtrace:
            # one dtrace -p per process (DTrace holds its target with
            # ptrace): a workload per view, side by side, each writing its
            # own file
            paths = {v[0]: os.path.join(tmp, "workload-%s.dat" % v[0]) for v in views}
            out = side_by_side([("system", [v], {"extra": ["--path", paths[v[0]]],
                                                 "stop_early": [n for n in stop if n == v[0]]}) for v in views])
            path = paths["file_opens"]
        else:
            out = run("system", views, extra=["--path", path], stop_early=stop)
    opens = scalar_map(out["file_opens"], "@opens")
    require(opens.get((path, "0")) == X.OPENS_OK, "opens of %s: %s" % (path, opens))
    require(opens.get((path + ".missing", "2")) == X.OPENS_MISSING, "ENOENT opens: %s" % opens)

    calls = {}  # by name: D has no syscall number to print ("-")
    for k, n in scalar_map(out["syscalls"], "@syscalls").items():
        calls[k[-1]] = calls.get(k[-1], 0) + n
    openat, write = calls.get("openat", 0), calls.get("write", 0)
    require(openat >= X.OPENS_OK + X.OPENS_MISSING, "openat count %d" % openat)
    require(write >= X.OPENS_OK, "write count %d" % write)

    m = re.search(r"^TOTAL\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", out["io_bytes"], re.M)
    require(m and int(m.group(2)) >= X.OPENS_OK * X.WRITE_SIZE, "io_bytes TOTAL write bytes")
    require(int(m.group(4)) >= X.OPENS_OK, "io_bytes TOTAL writes")

    m = re.search(r"^TOTAL\s+(\d+)$", out["page_faults"], re.M)
    require(m and int(m.group(1)) >= X.TOUCHED_PAGES, "page faults TOTAL")
    kernel = re.findall(r"^.*\b0xffff[0-9a-f]{12}\b.*$", out["page_faults"].split("Top 10")[-1], re.M)
    require(not kernel, "kernel addresses listed as user functions: %s" % kernel)

    rows = total_table(out["cswitch"], r"TOTAL since start", 4)
    vol = sum(int(r[2]) for r in rows)
    require(vol >= X.SLEEPS, "voluntary switches %d < %d" % (vol, X.SLEEPS))
    if S.TRACER.dtrace:
        # Oracle's DTrace for Linux never fires sched:::on-cpu (seen on this
        # kernel), so cswitch.d's off-CPU histogram stays empty here.
        print("cswitch.d off-CPU histogram not checked: no sched:::on-cpu on Oracle DTrace for Linux")
    else:
        sleeps = hist(out["cswitch"], "@offcpu_us[sleep]")
        long_ones = sum(c for b, c in sleeps.items()
                        if re.match(r"\[(8K|16K|32K|64K|128K|256K|512K|\d+M)", b))
        require(long_ones >= X.SLEEPS, "off-CPU sleeps of 8 ms or more: %d" % long_ones)

    folded = fold(out["cpu_profile"])
    require(folded, "no stack samples at all (the workload spins on CPU 0)")
    busy = sum(c for k, c in folded.items() if X.BUSY_FUNCTION in k)
    require(busy > 0, "no folded stack holds %s: %s" % (X.BUSY_FUNCTION, list(folded)[:5]))
    print("folded stacks with %s: %d samples" % (X.BUSY_FUNCTION, busy))


class BpftraceMap:
    """Map @NAME of a running bpftrace (found among its own file
    descriptors, not by name across the machine), read and written through
    bpftool: integer keys and values, each of the size the map says
    (bpftrace 0.27 keys @offts[tid] by 4 bytes, 0.17 and 0.23 by 8)."""

    def __init__(self, tracer_pid, name):
        """tracer_pid: bpftrace, or billing-probes trace running it."""
        self.bpftool = bt.require_program("bpftool", "bpftool")
        ids = []
        fds = [(pid, fd) for pid in S.process_tree(tracer_pid) for fd in os.listdir("/proc/%d/fdinfo" % pid)]
        for pid, fd in fds:
            try:
                m = re.search(r"^map_id:\s+(\d+)$", open("/proc/%d/fdinfo/%s" % (pid, fd)).read(), re.M)
            except OSError:  # closed meanwhile
                continue
            info = self.tool("map", "show", "id", m.group(1)) if m else {}
            if info.get("name") == ("AT_" + name)[:15]:
                ids.append((m.group(1), info.get("bytes_key"), info.get("bytes_value")))
        require(len(ids) == 1, "bpftrace %d holds %d maps named @%s" % (tracer_pid, len(ids), name))
        self.id, self.key_size, self.value_size = ids[0]
        require(self.key_size in (4, 8) and self.value_size == 8,
                "@%s: %s-byte keys, %s-byte values" % (name, self.key_size, self.value_size))

    def tool(self, *args):
        r = subprocess.run([self.bpftool, "-j"] + list(args), capture_output=True, text=True, timeout=TIMEOUT)
        return json.loads(r.stdout) if r.stdout.strip() else {}

    def hex(self, n, size=8):
        return ["%02x" % b for b in struct.pack("<Q" if size == 8 else "<I", n % (1 << (8 * size)))]

    def get(self, key):
        """The value at KEY, or None."""
        v = self.tool("map", "lookup", "id", self.id, "key", "hex", *self.hex(key, self.key_size)).get("value")
        return struct.unpack("<Q", bytes(int(b, 16) for b in v))[0] if v else None

    def set(self, key, value):
        self.tool("map", "update", "id", self.id, "key", "hex", *self.hex(key, self.key_size), "value", "hex",
                  *self.hex(value), "exist")
        require(self.get(key) == value % (1 << 64), "@map[%d] not set" % key)


def thread_state(pid, tid):
    """The state letter of /proc/PID/task/TID/stat (R, S, D, ...)."""
    return open("/proc/%d/task/%d/stat" % (pid, tid)).read().rsplit(")", 1)[1].split()[0]


def case_cswitch_long():
    """Off-CPU times no test can wait for: the park mode's two threads sleep
    until woken, and while they sleep the time cswitch.bt noted as their
    switch out (@offts[tid], nanoseconds) is moved back by
    PARK_STRETCH_US, so the time measured at their switch in is that much
    longer: 50 min, placed in [2G, 4G), and 2^33 us, in [8G, 16G) (bpftrace
    0.17's hist() filed it in [2G, 4G): the script buckets it).  bpftrace only: D
    keeps its switch-out times in thread-local variables no test can
    reach (and Oracle's DTrace for Linux fires no sched:::on-cpu)."""

    def stretch(wl, wl_reader, tracers):
        try:
            line = bt.wait_for("the workload's parked line",
                               lambda: next((l for l in wl_reader.lines if l.startswith("parked ")), None),
                               TIMEOUT, 0.05)
            offts = BpftraceMap(tracers["cswitch"].pid, "offts")
            for tid, us in zip([int(t) for t in line.split()[1:]], X.PARK_STRETCH_US):
                # asleep in read(): its switch out is noted and it stays off
                # CPU until woken (a time noted earlier, when it was
                # preempted, is deleted at its switch in, before it sleeps)
                t0 = bt.wait_for("thread %d asleep, its switch out noted" % tid,
                                 lambda: thread_state(wl.pid, tid) == "S" and offts.get(tid), TIMEOUT, 0.05)
                offts.set(tid, t0 - us * 1000)
        except RuntimeError as e:  # bt.wait_for's deadline
            raise S.Failure(str(e))
        wl.stdin.write(b"wake\n")
        wl.stdin.flush()

    out = run("park", [("cswitch", "cswitch", [1], True)], after_go=stretch)["cswitch"]
    long_rows = {r: n for r, n in hist(out, "@offcpu_us[sleep]").items() if re.match(r"\[\d+G, ", r)}
    require(long_rows == X.PARK_SLEEP_ROWS,
            "off-CPU sleeps from 2^31 us: %s, want %s" % (long_rows, X.PARK_SLEEP_ROWS))


def case_file_opens_none():
    """A view with nothing to show says so: the business mode opens no file
    once it has been told to go."""
    out = run("business", [("file_opens", "file_opens", [], True)])["file_opens"]
    body = out.split("]: COUNT\n", 1)[-1].strip().split("\n")
    require(body == ["none seen"], "after the heading: %r, want ['none seen']" % body)


def bpftrace_version():
    """(major, minor) of the bpftrace the cases run."""
    out = subprocess.run([S.TRACER.exe, "--version"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    m = re.search(r"v?(\d+)\.(\d+)", out)
    require(m, "bpftrace --version: %r" % out)
    return int(m.group(1)), int(m.group(2))


def case_parse():
    """Every .bt is compiled by bpftrace (dry run: bpftrace 0.17's -d
    compiles, --dry-run from 0.18 on also loads and attaches).  The USDT
    probes get the workload's path, as the -c form needs.  No warning on
    0.17 and 0.23; from 0.24 on, bpftrace's type checker warns of the
    scripts' mixed-sign arithmetic and their while loops, which 0.17's
    scripts cannot avoid (they are printed, and billing-probes trace passes
    --no-warnings there).  (The D scripts' counterpart is
    scripts-dtrace-compile.)"""
    bts = sorted(f for f in os.listdir(BT_SCRIPTS) if f.endswith(".bt"))
    require(bts, "no .bt scripts in %s" % BT_SCRIPTS)
    helptext = subprocess.run([S.TRACER.exe, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    dry = ["--dry-run"] if "--dry-run" in helptext.stdout + helptext.stderr else ["-d"]
    strict = bpftrace_version() < (0, 24)
    for name in bts:
        src = open(os.path.join(BT_SCRIPTS, name)).read()
        script = os.path.join(S.TRACER.tmp, name)
        with open(script, "w") as f:
            f.write(src.replace("usdt::billing:", "usdt:%s:billing:" % S.TRACER.workload))
        proc = subprocess.run([S.TRACER.exe] + dry + [script, "1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
        err = proc.stderr.decode()
        errors = [l for l in err.split("\n") if "ERROR" in l and "RLIMIT_MEMLOCK" not in l]
        require(proc.returncode == 0 and not errors, "%s does not compile:\n%s" % (name, err))
        # the script's warnings (file:line:col: WARNING, and 0.23's "Addrspace
        # is not set"), printed on every start; not the host's RLIMIT_MEMLOCK
        warnings = [l for l in err.split("\n") if re.match(r"(\S+:\d+:[\d-]+: )?WARNING", l)
                    and "RLIMIT_MEMLOCK" not in l]
        require(not (strict and warnings), "%s compiles with warnings:\n%s" % (name, "\n".join(warnings)))
        print("ok %s%s" % (name, "" if strict else " (%d type-checker warnings)" % len(warnings)))

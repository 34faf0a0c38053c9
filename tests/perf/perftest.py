"""The perf suite's own helpers (tests/perf): the budgets file, callgrind
runs, and what is read from their output.

tests/perf/budgets.json holds one entry per figure:

    "FIGURE": {"test": "events", "budget": 100, "unit": "instructions per event",
               "reason": "why this budget: the issue or the change that set it, and when"}

A test measures every figure whose entry names it, and only those.
hold() checks a count against its budget: over it fails with the figure,
the budget and the count.  Instructions come from callgrind (--tool=
callgrind): exact and the same on every run here, where hardware counters
are not available; times never appear in this suite (bench/ measures them).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

TESTS = ("events", "billingd", "exporter")
FIELDS = ("test", "budget", "unit", "reason")
SOURCE_ROOT = bt.SOURCE_ROOT


def number(x):
    """A count as a person reads it: 1,245 or 0.78 or 19.4."""
    if abs(x) >= 100 or float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:.2f}"


class Budgets:
    """The budgets of one test, read from the budgets file."""

    def __init__(self, path, test):
        self.path = os.path.relpath(os.path.abspath(path), SOURCE_ROOT)
        self.test = test
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)["budgets"]
        bad = []
        for name, e in entries.items():
            missing = [k for k in FIELDS if k not in e]
            if missing:
                bad.append(f"{name}: no {', '.join(missing)}")
            elif e["test"] not in TESTS:
                bad.append(f"{name}: test {e['test']!r} is none of {', '.join(TESTS)}")
            elif not isinstance(e["budget"], (int, float)) or isinstance(e["budget"], bool):
                bad.append(f"{name}: budget {e['budget']!r} is not a number")
            elif len(e["reason"].split()) < 4:
                bad.append(f"{name}: its reason says too little ({e['reason']!r})")
        bt.check(not bad, f"{self.path}: every entry has a test, a numeric budget, a unit and a reason"
                 + ("" if not bad else ": " + "; ".join(bad)))
        self.mine = {name: e for name, e in entries.items() if e.get("test") == test}
        self.counts = {}

    def hold(self, figure, count, detail=""):
        """Checks count against figure's budget; detail (how it was
        measured) is printed beside it either way."""
        e = self.mine.get(figure)
        if e is None:
            bt.check(False, f"{figure}: measured ({number(count)}) but {self.path} has no budget for it "
                     f"under test {self.test!r}")
            return False
        self.counts[figure] = {"count": count, "budget": e["budget"], "unit": e["unit"], "detail": detail}
        said = f" ({detail})" if detail else ""
        if count <= e["budget"]:
            return bt.check(True, f"{figure}: {number(count)} {e['unit']}, within its budget of "
                            f"{number(e['budget'])}{said}")
        return bt.check(False, f"{figure}: {number(count)} {e['unit']}, OVER its budget of {number(e['budget'])} "
                        f"({self.path}: its reason: {e['reason']}){said}")

    def finish(self):
        """Every budget of this test measured; the counts written to
        $PERF_COUNTS_DIR/perf-TEST.json when it is set (meson sets it to
        the build's tests/perf); then the verdict."""
        for name in sorted(set(self.mine) - set(self.counts)):
            bt.check(False, f"{name}: {self.path} gives it a budget under test {self.test!r}, "
                     "but this test did not measure it")
        if os.environ.get("PERF_COUNTS_DIR"):
            with open(os.path.join(os.environ["PERF_COUNTS_DIR"], f"perf-{self.test}.json"), "w",
                      encoding="utf-8") as f:
                json.dump(self.counts, f, indent=1)
        bt.finish()


# What changes the C library's work without changing ours: meson test sets
# MALLOC_PERTURB_ (every malloc and free then fills the block).
LIBC_SETTINGS = ("MALLOC_PERTURB_", "MALLOC_CHECK_", "GLIBC_TUNABLES", "LD_PRELOAD")


def clean_env(**extra):
    """The environment without any BILLING_* setting (every setting at its
    default) or C library setting (LIBC_SETTINGS), plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_") and k not in LIBC_SETTINGS}
    env.update(extra)
    return env


def require_valgrind():
    if not shutil.which("valgrind"):
        bt.skip("valgrind is not installed (tests/install-deps.sh installs it)")


class Workdir:
    """A private directory (segments, callgrind outputs), removed at the end."""

    def __init__(self, prefix):
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.path = tempfile.mkdtemp(prefix=prefix, dir=base)

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)


def callgrind_cmd(out, toggle=None, dump_instr=False, dump_after=None):
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    if toggle:
        cmd.append(f"--toggle-collect={toggle}")
    if dump_instr:
        cmd.append("--dump-instr=yes")
    if dump_after:
        cmd.append(f"--dump-after={dump_after}")
    return cmd


def collected(cmd, workdir, toggle, env):
    """Instructions callgrind counts inside toggle (and what it calls) over
    a run of cmd."""
    out = os.path.join(workdir, "callgrind.out")
    r = subprocess.run(callgrind_cmd(out, toggle) + cmd, capture_output=True, text=True, env=env, timeout=600)
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"callgrind {' '.join(cmd)} exited {r.returncode}: {r.stderr[-600:]}")
    if int(m.group(1)) == 0:
        raise RuntimeError(f"callgrind {' '.join(cmd)}: no instruction in {toggle} (renamed, or inlined?)")
    return int(m.group(1))


# --- callgrind's output: instructions, calls, instructions by address ------------

CLOCK_CALLS = re.compile(r"^(__)?(clock_gettime(64)?|gettimeofday|time)(@.*)?$")
COMPRESSED = re.compile(r"^\((\d+)\)(?: (.*))?$")


class Profile:
    """One callgrind output file (--dump-instr=yes): its total, the calls
    into each function from outside it (and from which object), the
    instructions spent inside each function called (inclusive), and the
    instructions executed at each address of each object."""

    def __init__(self, path):
        self.total, self.calls, self.calls_from, self.inside, self.at = 0, {}, {}, {}, {}
        names = {"ob": {}, "fn": {}}

        def name(kind, ref):
            m = COMPRESSED.match(ref)
            if not m:
                return ref
            if m.group(2) is not None:
                names[kind][m.group(1)] = m.group(2)
            return names[kind].get(m.group(1), "")

        ob = fn = cfn = None
        npos, pos = 1, [0, 0]
        call_cost_next = False  # after calls=: the callee, or "" for a call not counted
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("positions:"):
                    npos = len(line.split()) - 1
                elif line.startswith("ob="):
                    ob = name("ob", line[3:].strip())
                elif line.startswith("fn="):
                    fn = name("fn", line[3:].strip())
                elif line.startswith("cob="):
                    name("ob", line[4:].strip())
                elif line.startswith("cfn="):
                    cfn = name("fn", line[4:].strip())
                elif line.startswith("calls="):
                    call_cost_next = cfn if cfn and fn != cfn else ""
                    if call_cost_next:
                        n = int(line.split("=", 1)[1].split()[0])
                        self.calls[cfn] = self.calls.get(cfn, 0) + n
                        self.calls_from[(ob, cfn)] = self.calls_from.get((ob, cfn), 0) + n
                elif line.startswith("summary:") or line.startswith("totals:"):
                    self.total = int(line.split()[1])
                elif line[:1].isdigit() or line[:1] in ("+", "-", "*"):
                    fields = line.split()
                    for i in range(npos):
                        if fields[i] != "*":
                            pos[i] = pos[i] + int(fields[i], 0) if fields[i][0] in "+-" else int(fields[i], 0)
                    if call_cost_next is not False:  # a call's inclusive cost, not this instruction's own
                        if call_cost_next and len(fields) > npos:
                            self.inside[call_cost_next] = self.inside.get(call_cost_next, 0) + int(fields[npos])
                        call_cost_next = False
                    elif len(fields) > npos:
                        per = self.at.setdefault(ob, {})
                        per[pos[0]] = per.get(pos[0], 0) + int(fields[npos])

    def clock_calls(self, but_from=None):
        """Calls into the C library's clocks from outside them: {name:
        calls}; but_from (a pattern): not those from objects it matches."""
        out = {}
        for (ob, n), c in self.calls_from.items():
            if CLOCK_CALLS.match(n) and not (but_from and ob and re.search(but_from, ob)):
                out[n] = out.get(n, 0) + c
        return out

    def calls_into(self, name):
        return name in self.calls

    def executed(self, opcodes):
        """How many times an instruction of opcodes (e.g. rdtsc) ran, over
        every object: found by disassembling the objects this run used."""
        total = 0
        for ob, per in self.at.items():
            if not ob or not os.path.exists(ob):
                continue
            for addr in opcode_addresses(ob, opcodes):
                total += per.get(addr, 0)
        return total


_disassembled = {}


def opcode_addresses(path, opcodes):
    key = (path, tuple(opcodes))
    if key not in _disassembled:
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True).stdout
        want = re.compile(r"^\s*([0-9a-f]+):\s+(?:%s)\b" % "|".join(map(re.escape, opcodes)), re.M)
        _disassembled[key] = {int(m.group(1), 16) for m in want.finditer(dis)}
    return _disassembled[key]

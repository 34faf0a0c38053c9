#!/usr/bin/env python3
"""Terminal escapes through billing-exporter's stderr (issue 20): the
exporter runs as root and writes lines that carry text other users chose:
paths of programs they run and of segments they write, arguments on its
command line.  An ESC sequence written raw retitles the terminal or
rewrites what it shows; a newline forges a line of its own.

Replayed: a directory whose name holds ESC [ 2 J (clear screen) and a
newline, holding a copy of a probe-firing program with only some probes
(--binary: one "no PROBE probe, skipped" line per missing probe, each
naming the path), a file that is not ELF (a bad target, exit 2), and a
stats segment that is not one (--stats-dir: "PATH: ...: skipped"); the
same bytes in --uid, --cgroup and an unknown option.  Every stderr line
must be plain printable ASCII, start with "billing-exporter: ", and show
the bytes escaped as billing-probes shows them (\\x1b, \\x0a).

On the code before, the bytes went to stderr raw.  Needs root (BPF)."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
EVIL = "evil\x1b[2J\x1b]0;owned\x07\nbilling-exporter: forged"
SHOWN = "evil\\x1b[2J\\x1b]0;owned\\x07\\x0abilling-exporter: forged"

tmp = tempfile.mkdtemp(prefix="bx-escapes-")
evil_dir = os.path.join(tmp, EVIL)
os.mkdir(evil_dir)
program = os.path.join(evil_dir, "billing-service")
shutil.copy(fire, program)
not_elf = os.path.join(evil_dir, "not-elf")
with open(not_elf, "w") as f:
    f.write("not an ELF\n")
with open(os.path.join(evil_dir, "1.stats"), "wb") as f:
    f.write(b"\x1b[2J not a segment\n")


def stderr_of(what, argv, want_rc, want_lines):
    """Run the exporter; check its stderr is escaped, and holds each of
    want_lines (substrings) in a line of its own."""
    r = subprocess.run([exe, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = r.stderr
    raw = sorted({b for b in err if (b < 0x20 and b != 0x0a) or b >= 0x7f})
    lines = err.decode("ascii", "replace").splitlines()
    bt.check(r.returncode == want_rc, "%s: exit %d (got %d)" % (what, want_rc, r.returncode))
    bt.check(not raw and all(x.startswith("billing-exporter: ") for x in lines),
             "%s: stderr plain printable ASCII, every line the exporter's own (raw bytes %s; %r)"
             % (what, [hex(b) for b in raw], err[-400:]))
    for want in want_lines:
        bt.check(any(want in x for x in lines), "%s: a line with %r" % (what, want))


stderr_of("--binary, a target with some probes", ["--binary", program, "--metrics", "all", "--once",
                                                  "--interval", "1"], 0,
          ["binary:%s/%s/billing-service: no db__query__done probe, skipped" % (tmp, SHOWN)])
stderr_of("--binary, not ELF", ["--binary", not_elf, "--listen", "127.0.0.1:0"], 2,
          ["--binary %s/%s/not-elf: " % (tmp, SHOWN)])
stderr_of("--stats-dir, a file that is no segment", ["--stats-dir", evil_dir, "--once", "--interval", "1"], 0,
          ["%s/%s/1.stats: " % (tmp, SHOWN)])
stderr_of("--uid", ["--uid", EVIL, "--stats-dir", tmp], 2, ["--uid: %s is neither" % SHOWN])
stderr_of("--cgroup", ["--cgroup", evil_dir, "--stats-dir", tmp], 2, ["--cgroup %s/%s: " % (tmp, SHOWN)])
stderr_of("unknown option", ["--" + EVIL, "--stats-dir", tmp], 2, ["unknown option '--%s" % SHOWN])

# --pid of the program run from that directory: /proc/PID/maps shows the
# newline as \012, a path that reaches no file here, so the target is
# refused; the line names the path with its bytes escaped (the backslash of
# \012 doubled)
prog = h.FireProgram(program, "go", "1", "5")  # never told to go: it only has to be running
try:
    stderr_of("--pid of the program there", ["--pid", str(prog.pid), "--listen", "127.0.0.1:0"], 2,
              ["--pid %d: %s/%s/billing-service: " % (prog.pid, tmp, SHOWN.replace("\\x0a", "\\\\012"))])
finally:
    prog.release()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

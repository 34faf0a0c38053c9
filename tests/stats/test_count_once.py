#!/usr/bin/env python3
"""One process counts once, whatever combination of --pid, --stats-dir and
--binary names it (issue 30).  A stats writer W of the test's own copy of
stats_workload, its segment in DIR, fires N payments once the exporter is
attached (so a uprobe on its file sees each fire too):

  --pid W --stats-dir DIR            (W from its segment, auto and stats)
  --pid W --source usdt --stats-dir DIR   (W through USDT)
  --binary COPY --stats-dir DIR      (W through the --binary's uprobes)
                                     each: N payments, the segment's line;
                                     and a writer that came and went between
                                     two readings: counted once (USDT), its
                                     segment skipped as unattributed
  --pid W --binary COPY              refused (either source): exit 2
  --stats-dir DIR twice, --pid W twice   refused: exit 2

On the code before: 2N payments for each of the first four (528 for 396
in the issue), and the refused ones ran, counting W twice.  Needs root
(BPF, uprobes)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import statstest as st
from statstest import bt

sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
import exportertest as h  # noqa: E402

st.require_built()
exe = h.env_path("BX_EXPORTER")
h.require_exporter_can_run()
N = 396


class Writer:
    """The copy of stats_workload in `go` mode: its segment made, it
    fires N payments when told, then waits until stopped."""

    def __init__(self, program, stats_dir):
        self.proc = subprocess.Popen([program, "go", str(N)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=dict(os.environ, BILLING_STATS_DIR=stats_dir))
        line = self.proc.stdout.readline().split()
        if line[:1] != ["segment"] or len(line) < 3:
            raise RuntimeError("stats_workload go: %r" % line)
        self.pid, self.path = int(line[1]), line[2]

    def fire(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != "fired":
            raise RuntimeError("stats_workload go did not fire")

    def stop(self):
        bt.kill_all(self.proc)


def payments(samples):
    return h.total(samples, "billing_payments_total")


def once(*args):
    """(exit code, stderr) of a --once run."""
    r = bt.run([exe, *args, "--once", "--interval", "1", "--format", "json"], timeout=120)
    total = sum(d["value"] for d in map(json.loads, r.stdout.splitlines()) if d.get("metric") == "billing_payments_total")
    return r.returncode, total, r.stderr


tmp = tempfile.mkdtemp(prefix="bx-count-once-")
os.chmod(tmp, 0o755)
program = os.path.join(tmp, "billing-service-stats")  # a file no other test's process maps
shutil.copy(st.WORKLOAD, program)
writers, exporters = [], []
try:
    for i, (name, args, said) in enumerate((
            ("--pid W --stats-dir DIR", ["--pid", "{pid}", "--stats-dir", "DIR"], "counted there"),
            ("--pid W --source stats --stats-dir DIR", ["--pid", "{pid}", "--source", "stats", "--stats-dir", "DIR"],
             "counted there"),
            ("--pid W --source usdt --stats-dir DIR", ["--pid", "{pid}", "--source", "usdt", "--stats-dir", "DIR"],
             "counted there"),
            ("--binary COPY --stats-dir DIR", ["--binary", program, "--stats-dir", "DIR"],
             "counted there through USDT"))):
        stats_dir = os.path.join(tmp, "stats-%d" % i)  # W's segment alone
        args = [a.replace("DIR", stats_dir) for a in args]
        w = Writer(program, stats_dir)
        writers.append(w)
        ex = h.Exporter(exe, *(a.format(pid=w.pid) for a in args))
        exporters.append(ex)
        w.fire()
        got = payments(ex.samples())
        bt.check(got == N, "%s: W's %d payments counted once (got %s)" % (name, N, got))
        lines = [x for x in ex.output().splitlines() if x.startswith("billing-exporter: " + w.path)]
        bt.check(len(lines) == 1 and said in lines[0], "%s: its segment in DIR not summed again, said in one line "
                 "(%r)" % (name, lines))
        if args[0] == "--binary":
            # a writer that comes and goes between two readings: the
            # --binary counted its fires through USDT; whether its segment
            # is the same process's cannot be told once it is gone
            r = bt.run([program, "threads", "1", "50"], env=dict(os.environ, BILLING_STATS_DIR=stats_dir))
            s = ex.samples()
            skipped = h.total(s, "billing_exporter_stats_segments_skipped", reason="unattributed")
            bt.check(r.returncode == 0 and payments(s) == N + 50 and skipped == 1,
                     "%s: a writer gone before it was read: its 50 fires counted once, its segment skipped as "
                     "unattributed (%s payments, %s skipped)" % (name, payments(s), skipped))
        ex.stop()
        w.stop()

    stats_dir = os.path.join(tmp, "stats")
    w = Writer(program, stats_dir)
    writers.append(w)
    for args, want in ((["--pid", str(w.pid), "--binary", program],
                        "--pid %d maps a file --binary %s attaches to" % (w.pid, program)),
                       (["--pid", str(w.pid), "--source", "usdt", "--binary", program],
                        "which --binary %s attaches to" % program),
                       (["--pid", str(w.pid), "--source", "stats", "--binary", program],
                        "--pid %d maps a file --binary %s attaches to" % (w.pid, program)),
                       (["--binary", program, "--binary", program], "name one file"),
                       (["--stats-dir", stats_dir, "--stats-dir", stats_dir + "/"], "names already"),
                       (["--pid", str(w.pid), "--pid", "0%d" % w.pid], "named twice")):
        rc, total, err = once(*args)
        lines = err.strip().splitlines()
        bt.check(rc == 2 and any(want in x for x in lines) and total == 0,
                 "%s: refused, exit 2, a line with %r (rc %d, %r)" % (" ".join(args).replace(tmp, "TMP"), want, rc,
                                                                      lines[-2:]))
finally:
    for ex in exporters:
        if ex.proc.poll() is None:
            ex.stop()
    for w in writers:
        w.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

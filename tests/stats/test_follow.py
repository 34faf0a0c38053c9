#!/usr/bin/env python3
"""A reading that follows a segment reads only what changed since the one
before (tools/stats-reader/stats_read.h): its changes, summed over every reading, are
what a fresh reading finds, cell by cell and native cell by native cell.

stats_dump --follow reads one segment at each line it is sent, into one
reading, and sums each reading's changes; once the writer is done it reads
once more, reads the segment afresh and counts the differences.  Cases: a
writer with full label sets firing a label set a millisecond (values
spread over many classic buckets, so native cells change in many of them)
followed through 40 readings, and again with two readings of three
deferring its native cells (as a text scrape does) and the third
catching up; a writer that fires every label set between readings, each
reading deferring, then one that catches up while it still runs; then a
later process's segment put at the same path (a new generation: the
reading starts afresh); and eight threads counting at once while
followed."""
import json
import os
import shutil
import subprocess
import tempfile
import time

import statstest as st
from statstest import bt

st.require_built()


class Follower:
    def __init__(self, path):
        self.proc = subprocess.Popen([st.DUMP, "--follow", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def read(self, how="read"):
        self.proc.stdin.write(how + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.startswith("read "):
            raise RuntimeError("stats_dump --follow: " + line + self.proc.stderr.read())

    def result(self):
        out, errs = self.proc.communicate(timeout=120)
        last = out.strip().splitlines()[-1]
        return json.loads(last)["follow"]


def check_follow(what, f, want_changes=True, want_deferred=0):
    r = f.result()
    bt.check("error" not in r and r["differences"] == 0,
             f"{what}: the changes of {r.get('readings')} readings summed are the fresh reading "
             f"({r.get('changed_rows')} row changes, {r.get('changed_natives')} native cell changes; "
             f"{r.get('differences')} differences{': ' + r['first'] if r.get('first') else ''}"
             f"{r.get('error', '')})")
    if want_changes:
        bt.check(r.get("changed_rows", 0) > r.get("readings", 0) and r.get("changed_natives", 0) > 0,
                 f"{what}: the readings saw the writer's changes as it counted ({r})")
        bt.check(r.get("mapped", 0) > 0, f"{what}: readings of the running writer read its cells in place ({r})")
    if want_deferred:
        bt.check(r.get("deferred") == want_deferred,
                 f"{what}: {want_deferred} readings left native cells behind, the others caught up ({r})")
    return r


with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
    d = os.path.join(tmp, "segments")
    env = dict(os.environ, BILLING_STATS_DIR=d)
    for deferring in (False, True):
        w = subprocess.Popen([st.WORKLOAD, "full", "3", "trickle"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=env, text=True)
        line = w.stdout.readline()
        path = line.split(" ", 2)[2].strip()
        f = Follower(path)
        for k in range(40):
            f.read("defer" if deferring and k % 3 != 2 else "read")
            time.sleep(0.01)
        w.stdin.close()
        w.wait(timeout=60)
        check_follow("full label sets, a label set a millisecond" + (", native cells deferred" if deferring else ""),
                     f, want_deferred=27 if deferring else 0)

    # Every reading defers while the writer fires every label set between
    # them; the last catches up while the writer still runs (idle).
    d2 = os.path.join(tmp, "steps")
    w = subprocess.Popen([st.WORKLOAD, "full", "3", "step"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=dict(os.environ, BILLING_STATS_DIR=d2), text=True)
    path2 = w.stdout.readline().split(" ", 2)[2].strip()
    f = Follower(path2)
    for _ in range(5):
        w.stdin.write("step\n")
        w.stdin.flush()
        bt.check(w.stdout.readline().strip() == "fired", "the writer fired every label set")
        f.read("defer")
    r = check_follow("every reading deferred, then one caught up beside a running writer", f, want_deferred=5)
    bt.check(r.get("mapped") == 6, f"every reading was of the running writer ({r})")
    w.stdin.close()
    w.wait(timeout=60)

    # A later process's segment at the same path: a new generation.
    f = Follower(path)
    f.read()
    other = st.run(["full", "2"], {"BILLING_STATS_DIR": os.path.join(tmp, "other")})
    newer = st.segments(other.stdout)[0][1]
    shutil.copyfile(newer, path + ".new")
    os.rename(path + ".new", path)
    f.read()
    check_follow("a new generation at the path", f, want_changes=False)

    # Eight threads counting while the segment is followed.
    d8 = os.path.join(tmp, "threads")
    w = subprocess.Popen([st.WORKLOAD, "threads", "8", "400000"], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, BILLING_STATS_DIR=d8))
    path8 = None
    deadline = time.monotonic() + 60
    while not path8 and time.monotonic() < deadline:
        names = os.listdir(d8) if os.path.isdir(d8) else []
        path8 = os.path.join(d8, names[0]) if names else None
        time.sleep(0.001)
    bt.check(path8 is not None, "the threads' segment appeared")
    f = Follower(path8)
    while w.poll() is None:
        f.read()
    w.wait()
    check_follow("eight threads counting", f, want_changes=False)
bt.finish()

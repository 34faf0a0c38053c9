#!/usr/bin/env python3
"""The stats writer's environment, parsed whole (issue 30): a value it
cannot take (an unknown word, a unit where none is taken, a negative
number, a relative directory, a group that does not exist) or a
BILLING_STATS_* name that is no setting is one stderr line naming the
variable, the value and what is used instead; durations take units.
A refused BILLING_STATS_DIR, or a name that may be a misspelt one
(BILLING_STAT_DIR, BILLING_STATS_DIRECTORY, BILLING_STATSDIR) without a
BILLING_STATS_DIR taken, turns the stats off (issue 45): the code before
put the segment in the default directory, shared by the user's services,
and did not see the first and last names at all.

On the code before: BILLING_STATS=of and =no left the stats on, silently;
BILLING_STATS_KEEP=1h was read as 1 s and =-5 removed every gone process's
segment at once; BILLING_STATS_THREADS=64k was read as 64; an unknown name
was ignored without a word."""
import os
import stat
import tempfile
import time

import statstest as st
from statstest import bt

st.require_built()


def run(tmp, name, **env):
    """(segment path or "", stderr lines) of one small workload run with
    the stats in tmp/name unless env says otherwise."""
    e = {"BILLING_STATS_DIR": os.path.join(tmp, name)}
    e.update(env)
    p = st.run(["threads", 1, 10], e)
    segs = st.segments(p.stdout)
    bt.check(p.returncode == 0 and len(segs) == 1, f"{env}: the workload ran ({p.returncode}, {p.stderr.strip()})")
    return (segs[0][1] if segs else ""), p.stderr.strip().splitlines()


def one_line(lines, *parts):
    return len(lines) == 1 and all(x in lines[0] for x in parts)


def gone_segments(d, ages):
    """Copies of a gone writer's segment in d, one per age in seconds
    (its mtime that far back); their paths."""
    path, _ = run(d, "", BILLING_STATS_DIR=d)
    data = open(path, "rb").read()
    out = []
    for i, age in enumerate(ages):
        copy = os.path.join(d, f"{4100000 + i}.stats")
        with open(copy, "wb") as f:
            f.write(data)
        os.chmod(copy, 0o600)
        os.utime(copy, (time.time() - age, time.time() - age))
        out.append(copy)
    return out


with tempfile.TemporaryDirectory() as tmp:
    # --- BILLING_STATS: a word it knows, or off with a line ---------------------
    for value in ("off", "0", "no", "false"):
        path, lines = run(tmp, "off-" + value, BILLING_STATS=value)
        bt.check(path == "" and not lines and not os.path.exists(os.path.join(tmp, "off-" + value)),
                 f"BILLING_STATS={value}: no segment, no directory, nothing said ({lines})")
    for value in ("of", "disabled", "OFF"):
        path, lines = run(tmp, "typo-" + value, BILLING_STATS=value)
        bt.check(path == "" and one_line(lines, f"BILLING_STATS={value}:", "stats off"),
                 f"BILLING_STATS={value}: stats off, said in one line naming it ({lines})")
    for value in ("on", "1"):
        path, lines = run(tmp, "on-" + value, BILLING_STATS=value)
        bt.check(path != "" and not lines, f"BILLING_STATS={value}: a segment, nothing said ({lines})")

    # --- BILLING_STATS_NATIVE: native buckets on (the default) or off ----------
    for value, counted, said in (("", True, False), ("off", False, False), ("on", True, False),
                                 ("of", True, True)):
        path, lines = run(tmp, "native-" + (value or "default"), BILLING_STATS_NATIVE=value)
        seg = st.dump([path])[0] if path else {"error": "no segment"}
        natives = [r["native"] for r in st.rows(seg, "m_payment_auth")] if "error" not in seg else []
        whole = bool(natives) and st.native_whole(seg, "m_payment_auth")
        bt.check("error" not in seg and (whole if counted else natives and not any(natives))
                 and (one_line(lines, f"BILLING_STATS_NATIVE={value}:", "native buckets on") if said else not lines),
                 f"BILLING_STATS_NATIVE={value!r}: the segment reads, native buckets "
                 f"{'counted' if counted else 'absent'}{', said in one line' if said else ''} ({seg.get('error')}, {lines})")

    # --- BILLING_STATS_KEEP: a duration, with a unit --------------------------
    # Gone writers' segments 30 min and 2 h old: a new writer with KEEP=1h
    # removes only the 2 h one; one with KEEP=-5 keeps both (the default
    # hour, said) where the code before removed every one.
    for i, (value, kept, line) in enumerate((
            ("1h", [True, False], None), ("60m", [True, False], None), ("5400s", [True, False], None),
            ("1d", [True, True], None), ("-5", [True, False], "3600 s used"),
            ("1.5h", [True, False], "3600 s used"), ("1 h", [True, False], "3600 s used"),
            ("3651d", [True, False], "3600 s used"))):
        d = os.path.join(tmp, f"keep{i}")
        os.mkdir(d, 0o700)
        copies = gone_segments(d, [1800, 7200])
        _, lines = run(tmp, "", BILLING_STATS_DIR=d, BILLING_STATS_KEEP=value)
        got = [os.path.exists(c) for c in copies]
        bt.check(got == kept, f"BILLING_STATS_KEEP={value}: segments gone 30 min / 2 h kept {got}, want {kept}")
        if line:
            bt.check(one_line(lines, f"BILLING_STATS_KEEP={value}:", line),
                     f"BILLING_STATS_KEEP={value}: one line naming it and what is used ({lines})")
        else:
            bt.check(not lines, f"BILLING_STATS_KEEP={value}: taken, nothing said ({lines})")

    # --- BILLING_STATS_THREADS: a whole number 1..65536 ------------------------
    for value, slots, line in (("8", 9, None), ("64k", 65, "64 slots used"), ("-1", 65, "64 slots used"),
                               ("0", 65, "64 slots used"), ("65537", 65, "64 slots used")):
        path, lines = run(tmp, "threads" + value, BILLING_STATS_THREADS=value)
        h = st.header(open(path, "rb").read(4096)) if path else {}
        bt.check(h.get("nslots") == slots, f"BILLING_STATS_THREADS={value}: {h.get('nslots')} slots, want {slots} "
                 "(the overflow slot included)")
        if line:
            bt.check(one_line(lines, f"BILLING_STATS_THREADS={value}:", line),
                     f"BILLING_STATS_THREADS={value}: one line naming it and what is used ({lines})")
        else:
            bt.check(not lines, f"BILLING_STATS_THREADS={value}: taken, nothing said ({lines})")

    # --- BILLING_STATS_GROUP: a group that exists -------------------------------
    path, lines = run(tmp, "group", BILLING_STATS_GROUP="no-such-group-here")
    bt.check(path and stat.S_IMODE(os.stat(path).st_mode) == 0o600
             and one_line(lines, "BILLING_STATS_GROUP=no-such-group-here:", "(0600)"),
             f"BILLING_STATS_GROUP of no group: segment 0600, said in one line ({lines})")

    # --- a name that is no setting; bytes a terminal would act on ---------------
    path, lines = run(tmp, "unknown", BILLING_STATS_KEPP="60")
    bt.check(path and one_line(lines, "BILLING_STATS_KEPP=60:", "ignored"),
             f"BILLING_STATS_KEPP: said to be no setting, in one line ({lines})")
    path, lines = run(tmp, "escaped", BILLING_STATS_THREADS="\x1b[2J\x07")
    bt.check(path and one_line(lines, "BILLING_STATS_THREADS=\\x1b[2J\\x07:"),
             f"a value's control bytes shown as \\xNN ({lines})")

    # A name beside the settings with BILLING_STATS_DIR taken: said, the
    # segment where it was meant to go
    path, lines = run(tmp, "beside", BILLING_STAT_DIR="/elsewhere")
    bt.check(path and os.path.dirname(path) == os.path.join(tmp, "beside")
             and one_line(lines, "BILLING_STAT_DIR=/elsewhere:", "not a setting", "ignored"),
             f"BILLING_STAT_DIR beside a BILLING_STATS_DIR: said in one line, the segment in the directory named ({lines})")

    # --- where a segment may not go: the default directory, shared ------------
    # A refused BILLING_STATS_DIR, or a name that may be a misspelt one
    # with no BILLING_STATS_DIR taken, turns the stats off: in the default
    # directory the segment would be summed with the user's other
    # services'.  Run as a user of the test's own, whose default directory
    # must stay absent (removed after, if a run made one).
    if os.geteuid() == 0:
        uid = 64990
        default = f"/dev/shm/billing-stats-{uid}"
        workload = os.path.join(tmp, "workload")
        with open(st.WORKLOAD, "rb") as src, open(workload, "wb") as dst:
            dst.write(src.read())
        os.chmod(workload, 0o755)
        os.chmod(tmp, 0o755)
        meant = os.path.join(tmp, "meant")
        plain = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_STAT")}
        try:
            for name, value, said in (("BILLING_STATS_DIR", "relative/dir", "not an absolute path"),
                                      ("BILLING_STATS_DIR", "/" + "d" * 4100, "too long"),
                                      ("BILLING_STAT_DIR", meant, "not a setting"),
                                      ("BILLING_STATS_DIRECTORY", meant, "not a setting"),
                                      ("BILLING_STATSDIR", meant, "not a setting")):
                p = bt.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", workload,
                            "threads", "1", "10"], env=dict(plain, **{name: value}), cwd=tmp)
                segs = st.segments(p.stdout)
                lines = p.stderr.strip().splitlines()
                shown = value if len(value) < 64 else value[:64] + "..."
                bt.check(p.returncode == 0 and segs and not segs[0][1] and not os.path.exists(default)
                         and not os.path.exists(meant) and not os.path.exists(os.path.join(tmp, "relative"))
                         and one_line(lines, f"{name}={shown}:", said, "stats off"),
                         f"{name}={shown[:20]}...: stats off, said in one line; no segment, not in the default "
                         f"directory {default} ({segs}, {lines})")
                for f in os.listdir(default) if os.path.isdir(default) else []:
                    os.unlink(os.path.join(default, f))
        finally:
            for f in os.listdir(default) if os.path.isdir(default) else []:
                os.unlink(os.path.join(default, f))
            if os.path.isdir(default):
                os.rmdir(default)
    else:
        print("the BILLING_STATS_DIR cases need root to run as a user of their own (CI runs as root)")
bt.finish()

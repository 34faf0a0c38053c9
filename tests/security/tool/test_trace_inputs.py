"""Attacks 2 and 7 of issue 20: what trace and doctor take from the
working directory and the environment, run as root.

The attacker leaves files where root may be (a directory of theirs, the
working directory, a PATH entry, $BPFTRACE): a script named tps, a
"bpftrace" that records it ran and as whom.  Before, `trace tps` ran
./tps when the working directory held one; a script named by a path was
run whoever owned it; $BPFTRACE (a relative one too) and the first
bpftrace in PATH were run as root, and doctor ran PATH's.  Now a bare name
is only ever a shipped script; a script, $BPFTRACE or a PATH hit owned by
another user or in a directory they may write is refused with one line
(exit 2; doctor: a WARN naming it) and never run.  A root-owned script in
a root-only directory still runs.
"""
import os
import subprocess

from sectest import SUBSET, attacker_dir, check, finish, lines, need_probes, remove, root_dir, tool

need_probes()

uid, gid, prefix, evil = attacker_dir()
mine = root_dir()
prog = None
EVIL_SCRIPT = 'BEGIN { printf("ATTACKER SCRIPT\\n"); exit(); }\n'
EVIL_TRACER = "#!/bin/sh\nid -u > %s/ran-as\nexit 0\n" % evil
ran_as = os.path.join(evil, "ran-as")


def as_attacker(path, text, mode):
    subprocess.run(prefix + ["sh", "-c", 'cat > "$1" && chmod %o "$1"' % mode, "sh", path],
                   input=text.encode(), check=True)


def tracer_ran(what):
    ran = os.path.exists(ran_as)
    if ran:
        print("%s ran the attacker's bpftrace as uid %s" % (what, open(ran_as).read().strip()))
        os.unlink(ran_as)
    return ran


try:
    as_attacker(os.path.join(evil, "tps"), EVIL_SCRIPT, 0o644)
    as_attacker(os.path.join(evil, "bpftrace"), EVIL_TRACER, 0o755)
    prog = subprocess.Popen([SUBSET, "1", "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    check(prog.stdout.readline().strip() == b"ready", "a service runs")
    pid = str(prog.pid)

    # a bare name, run from the attacker's directory (one whose probes the
    # service carries: trace refuses a script it carries none of)
    as_attacker(os.path.join(evil, "biz_metrics"), EVIL_SCRIPT, 0o644)
    rc, out, err = tool(["trace", "biz_metrics", "-p", pid, "--dry-run"], cwd=evil)
    check(rc == 0 and b"ATTACKER" not in out and b"business figures" in out,
          "trace biz_metrics from the attacker's directory: the shipped biz_metrics (%d %r)" % (rc, out[:120]))

    # a path to the attacker's file
    rc, out, err = tool(["trace", os.path.join(evil, "tps"), "-p", pid, "--dry-run"])
    check(rc == 2 and b"ATTACKER" not in out and len(lines(err)) == 1 and b"not trusted" in err,
          "trace PATH of the attacker's script: refused with one line, exit 2 (%d %r %r)" % (rc, out[:80], err))

    # the operator's own script in a directory only root may write
    ok_script = os.path.join(mine, "mine.bt")
    with open(ok_script, "w") as f:
        f.write('BEGIN { printf("ROOT SCRIPT\\n"); exit(); }\n')
    rc, out, err = tool(["trace", ok_script, "-p", pid, "--dry-run"])
    check(rc == 0 and b"ROOT SCRIPT" in out, "a root-owned script in a root-only directory is run (%d %r)" % (rc, err))

    base_env = {k: v for k, v in os.environ.items() if k != "BPFTRACE"}
    for what, env, cwd in (("$BPFTRACE = the attacker's file", dict(base_env, BPFTRACE=os.path.join(evil, "bpftrace")), None),
                           ("$BPFTRACE = ./bpftrace in their directory", dict(base_env, BPFTRACE="./bpftrace"), evil),
                           ("their directory first in PATH", dict(base_env, PATH=evil + ":" + os.environ.get("PATH", "")), None)):
        rc, out, err = tool(["trace", "tps", "-p", pid], env=env, cwd=cwd)
        check(not tracer_ran(what), "%s: not run" % what)
        check(rc == 2 and len(lines(err)) == 1 and b"bpftrace" in err,
              "%s: refused with one line, exit 2 (%d %r)" % (what, rc, err))

    env = dict(base_env, PATH=evil + ":" + os.environ.get("PATH", ""))
    rc, out, err = tool(["doctor"], env=env)
    line = next((l for l in lines(out) if "  bpftrace: " in l), "")
    check(not tracer_ran("doctor"), "doctor with their directory first in PATH: their bpftrace not run")
    check(line.startswith("WARN") and evil in line and "not trusted" in line,
          "doctor names the untrusted bpftrace (%r)" % line)
finally:
    if prog is not None:
        prog.stdin.close()
        prog.wait(10)
    remove(evil)
    remove(mine)
finish()

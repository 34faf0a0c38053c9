"""Bad input to list and check: exit 2, exactly one line on stderr naming
the target, never a signal, never a hang (every run has a timeout)."""
import json
import os
import sys
import random
import re
import shutil
import subprocess
import tempfile
import time


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tooltest import PROBES, PROGRAM, PROVIDER, catalogue, check, finish, run  # noqa: E402

N = len(catalogue())


def bad(args, target, why, user=None, commands=("list", "check")):
    for cmd in commands:
        full = [cmd] + args + (["--provider", PROVIDER] if cmd == "check" else [])
        rc, out, err = run(full, user=user)
        lines = err.splitlines()
        check(rc == 2 and len(lines) == 1 and target in lines[0] and why in lines[0],
              "%s %s: exit 2, one line naming it with %r (rc=%d, stderr=%r)" % (cmd, " ".join(args), why, rc, err))


def note_section(path):
    """File offset and size of .note.stapsdt, from readelf -S."""
    out = subprocess.run(["readelf", "-S", "--wide", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\.note\.stapsdt\s+NOTE\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", out)
    return int(m.group(1), 16), int(m.group(2), 16)


tmp = tempfile.mkdtemp(prefix="bp-bad-")
os.chmod(tmp, 0o755)
try:
    bad([os.path.join(tmp, "absent")], "absent", "no such file")
    bad([tmp], tmp, "is a directory")
    bad(["/etc/hostname"], "/etc/hostname", "not an ELF file")
    bad(["/dev/null"], "/dev/null", "not a regular file")
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    bad([fifo], fifo, "not a regular file")  # must not block in open()
    rc, out, err = run(["check", PROGRAM, "--provider", fifo])
    check(rc == 2 and len(err.splitlines()) == 1 and "not a regular file" in err,
          "a FIFO as provider file: exit 2 without blocking (%r)" % err)

    notes = subprocess.run(["readelf", "-n", "/bin/true"], capture_output=True, text=True).stdout
    if check("stapsdt" not in notes, "/bin/true has no stapsdt notes (precondition)"):
        bad(["/bin/true"], "/bin/true", "no USDT probes", commands=("list",))

    if not PROBES:
        print("note: no probes in this build: the corrupted-note cases need a program carrying them; not run")
    data = open(PROGRAM, "rb").read()
    for cut in (10, 64, len(data) // 2, len(data) - 1):
        path = os.path.join(tmp, "truncated-%d" % cut)
        with open(path, "wb") as f:
            f.write(data[:cut])
        bad([path], path, "")
    if PROBES:
        offset, size = note_section(PROGRAM)

        def corrupt(name, edits):
            blob = bytearray(data)
            for pos, value in edits:
                blob[pos:pos + len(value)] = value
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(blob)
            return path

        # The first note: namesz(4) descsz(4) type(4) "stapsdt\0" then pc/base/sem (24), provider...
        desc = offset + 12 + 8
        args_at = data.index(b"\0", data.index(b"\0", desc + 24) + 1) + 1  # after provider\0 name\0
        # An argument no compiler prints is that argument "unknown", never
        # the file unreadable: list shows it, check calls it a mismatch.
        first_args = data[args_at:data.index(b"\0", args_at)].decode()
        for name, edit, shown in (("bad-args", b"9@%rdi", "9@%rdi"),
                                  ("bad-operand", b"\x01", first_args.split()[0][:2] + "?")):
            path = corrupt(name, [(args_at + (2 if name == "bad-operand" else 0), edit)])
            rc, out, err = run(["list", path, "--json"])
            args0 = json.loads(out)["probes"][0]["arguments"][0] if rc == 0 else {}
            check(rc == 0 and not err and args0.get("kind") == "unknown" and args0.get("location", "").startswith(shown),
                  "list %s: exit 0, its first argument unknown, shown as %r (rc=%d %r %r)" % (name, shown, rc, err, args0))
            rc, out, err = run(["check", path, "--provider", PROVIDER])
            check(rc == 1 and "cannot be decoded" in out,
                  "check %s: exit 1, the argument cannot be decoded (rc=%d %r)" % (name, rc, out[-300:]))
        bad([corrupt("bad-provider", [(desc + 24, b"bil ing")])], "bad-provider", "malformed provider")
        bad([corrupt("descsz-huge", [(offset + 4, b"\xff\xff\x00\x00")])], "descsz-huge", "corrupt .note.stapsdt")
        end = offset + size
        unterminated = bytes(b if b else 0x41 for b in data[desc + 24:end])
        bad([corrupt("no-nul", [(desc + 24, unterminated)])], "no-nul", "malformed stapsdt note")

        # Random byte flips inside the notes: whatever the tool answers, it
        # answers cleanly (0, 1 for check's verdict, or 2 with one line).
        rng = random.Random(20261122)
        clean = True
        for i in range(150):
            edits = [(rng.randrange(offset, end), bytes([rng.randrange(256)])) for _ in range(rng.randrange(1, 6))]
            path = corrupt("flip-%d" % i, edits)
            for cmd in (["list", path, "--json"], ["check", path, "--provider", PROVIDER]):
                rc, out, err = run(cmd)
                if rc < 0 or rc not in (0, 1, 2) or (rc == 2 and len(err.splitlines()) != 1):
                    clean = False
                    print("unclean: %r -> %d %r" % (cmd, rc, err))
            os.unlink(path)
        check(clean, "150 randomly corrupted notes: every answer clean (no signal, one line on exit 2)")

    bad(["999999999"], "999999999", "no such process")
    bad(["0"], "0", "no such process")

    # A process that has exited but is not reaped: /proc/PID exists, its
    # maps are empty -- the deterministic form of "exited mid-read".
    zombie = subprocess.Popen(["true"])
    for _ in range(100):
        state = open("/proc/%d/stat" % zombie.pid).read().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.02)
    bad([str(zombie.pid)], str(zombie.pid), "exited")
    zombie.wait()

    # Processes exiting while being read: race the tool against short-lived
    # programs.  Any outcome but a crash or a multi-line error is a bug.
    clean = True
    outcomes = {}
    for i in range(30):
        child = subprocess.Popen([PROGRAM, "0.%02d" % (i % 10)], stdout=subprocess.DEVNULL)
        rc, out, err = run(["list", str(child.pid), "--json"])
        child.wait()
        outcomes[rc] = outcomes.get(rc, 0) + 1
        if rc not in (0, 2) or (rc == 2 and (len(err.splitlines()) != 1 or str(child.pid) not in err)):
            clean = False
            print("unclean race: %d %r" % (rc, err))
    check(clean, "30 races with exiting processes: clean answers (exit status counts %s)" % outcomes)

    if os.geteuid() == 0 and shutil.which("setpriv"):
        secret = os.path.join(tmp, "root-only")
        shutil.copy(PROGRAM, secret)
        os.chmod(secret, 0o600)
        bad([secret], secret, "permission denied", user=65534)
        # PID 1 belongs to root: nobody may not read its maps.
        bad(["1"], "1", "permission denied", user=65534)
        # ...but nobody may list its own process, without map_files.
        if PROBES:
            own = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PROGRAM, "10"],
                                   stdout=subprocess.PIPE, text=True)
            try:
                own.stdout.readline()
                rc, out, err = run(["list", str(own.pid), "-P", "billing"], user=65534)
                rows = [l for l in out.splitlines()[1:] if " billing " in l]
                check(rc == 0 and len(rows) == N and all(" no " in r for r in rows),
                      "an unprivileged user lists its own process: all %d probes, untraced (%d %r)" % (N, rc, err))
            finally:
                own.kill()
                own.wait()
        secret_d = os.path.join(tmp, "root-only.d")
        shutil.copy(PROVIDER, secret_d)
        os.chmod(secret_d, 0o600)
        rc, out, err = run(["check", PROGRAM, "--provider", secret_d], user=65534)
        check(rc == 2 and len(err.splitlines()) == 1 and secret_d in err and "Permission denied" in err,
              "an unreadable provider file: exit 2, one line (%d %r)" % (rc, err))
    else:
        print("note: permission cases need root and setpriv; not run")
finally:
    shutil.rmtree(tmp)
finish()

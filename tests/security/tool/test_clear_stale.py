"""Attack 3 of issue 20: `doctor --clear-stale` writes where the notes say.

The attacker builds a program whose stapsdt notes place three
"semaphores" in its .text (the first bytes of a function it calls),
.rodata (a constant it checks) and .data (a variable it checks, in its own
writable mapping but outside the semaphore section): all read non-zero
with no uprobe at their sites, so doctor finds them "stale".  Before,
root's --clear-stale wrote zeros into the code (the program died of
SIGSEGV), the constant and the variable; and in a root process that had
mapped the attacker's file as data (MAP_PRIVATE; read-only, or read-write
as a data mapping is), it changed root's memory.  Now nothing is written:
one line each on stderr ("left alone"), the semaphores line a FAIL, the
attacker's program runs on and root's mapping is byte for byte the file.
"""
import os
import subprocess

from sectest import LYING, PYTHON, attacker_dir, check, finish, kill_all, lines, need_probes, remove, tool

need_probes()

uid, gid, prefix, evil = attacker_dir()
program = os.path.join(evil, "lying_notes")
procs = []
try:
    subprocess.run(prefix + ["cp", LYING, program], check=True)

    # the attacker's own process
    prog = subprocess.Popen(prefix + [program, "6"], stdout=subprocess.PIPE, text=True)
    procs.append(prog)
    check(prog.stdout.readline().strip() == "ready", "the attacker's program runs")
    rc, out, err = tool(["doctor", str(prog.pid), "--clear-stale"])
    sem = next((l for l in lines(out) if "  semaphores: " in l), "")
    left = [l for l in lines(err) if "left alone" in l]
    print("exit %d\n%s\n%s" % (rc, sem, err.decode("latin-1")))
    check(len(left) == 3 and any("evil__text" in l and "r-xp" in l for l in left)
          and any("evil__rodata" in l for l in left) and any("evil__data" in l and ".probes" in l for l in left),
          "one line each for the counters in .text, .rodata and .data, left alone")
    check(rc == 1 and sem.startswith("FAIL") and "cleared" not in sem, "doctor: a FAIL, nothing cleared (%d %r)" % (rc, sem))
    tail = prog.stdout.read()
    prog.wait(30)
    check(prog.returncode == 0 and "held" in tail,
          "the attacker's program ran on, its code, constant and variable untouched (exit %d %r)"
          % (prog.returncode, tail))

    # a root process that maps the attacker's file as data
    watcher = ("import mmap, sys\n"
               "f = open(sys.argv[1], 'rb')\n"
               "prot = mmap.PROT_READ | (mmap.PROT_WRITE if sys.argv[2] == 'rw' else 0)\n"
               "m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=prot)\n"
               "print('mapped', flush=True)\n"
               "sys.stdin.readline()\n"
               "sys.stdout.write('same\\n' if m[:] == open(sys.argv[1], 'rb').read() else 'changed\\n')\n")
    for prot in ("r", "rw"):
        root = subprocess.Popen([PYTHON, "-c", watcher, program, prot], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        procs.append(root)
        check(root.stdout.readline().strip() == "mapped", "a root process maps the attacker's file %s, private" % prot)
        rc, out, err = tool(["doctor", str(root.pid), "--clear-stale"])
        sem = next((l for l in lines(out) if "  semaphores: " in l), "")
        print("exit %d\n%s\n%s" % (rc, sem, err.decode("latin-1")))
        check("cleared" not in sem and len([l for l in lines(err) if "left alone" in l]) == 3,
              "doctor on the root process (%s mapping): the counters in the data mapping left alone (%r)" % (prot, sem))
        root.stdin.write("\n")
        root.stdin.flush()
        verdict = root.stdout.readline().strip()
        check(verdict == "same", "the root process's %s mapping is the file byte for byte (%s)" % (prot, verdict))
finally:
    kill_all(procs)
    remove(evil)
finish()

"""What the live tests share: can bpftrace run here, and how to run it.

A live test calls require_bpftrace() first: it exits 77 (meson's skip)
with the reason when the tracer cannot run, so a skip always says why.
"""
import os
import shutil
import subprocess
import sys

SKIP = 77
TRACEFS = "/sys/kernel/tracing"


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def require_bpftrace():
    if os.geteuid() != 0:
        skip("needs root to attach uprobes (CI runs as root)")
    if not shutil.which("bpftrace"):
        skip("bpftrace is not installed (apt-get install bpftrace)")
    if not os.path.exists(os.path.join(TRACEFS, "uprobe_events")):
        r = subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"tracefs is not mounted at {TRACEFS} and mounting it failed: {r.stderr.strip()}")


def run_bpftrace_pid(program, args, timeout=120):
    """Start COMMAND --wait, attach bpftrace -p to it, then let it go.

    For probes in shared libraries: with -c, bpftrace 0.17 looks the
    library up before the program has loaded it.  Returns (program's stdout
    + bpftrace's stdout as bytes, bpftrace's stderr text)."""
    target = subprocess.Popen(args + ["--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        if target.stdout.readline().strip() != b"ready":
            print("target did not start")
            sys.exit(1)
        # BEGIN runs once every probe is attached ("Attaching N probes"
        # is printed before): its line is the signal to go.
        program = 'BEGIN { printf("attached\\n"); }\n' + program
        bt = subprocess.Popen(["bpftrace", "-p", str(target.pid), "-e", program],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = b""
        while line.strip() != b"attached":
            line = bt.stdout.readline()
            if not line:
                err = bt.stderr.read().decode(errors="replace")
                print(f"bpftrace did not attach:\n{err}")
                sys.exit(1)
        target.stdin.write(b"go\n")
        target.stdin.close()
        target_out = target.stdout.read()
        target.wait(timeout=timeout)
        out, err = bt.communicate(timeout=timeout)
        return target_out + out, err.decode(errors="replace")
    finally:
        for proc in (target,):
            if proc.poll() is None:
                proc.kill()


def run_bpftrace(program, args, timeout=120):
    """bpftrace -e PROGRAM -c COMMAND; returns (stdout bytes, stderr text)."""
    cmd = ["bpftrace", "-e", program, "-c", " ".join(args)]
    r = subprocess.run(cmd, capture_output=True, timeout=timeout)
    err = r.stderr.decode(errors="replace")
    if r.returncode != 0:
        print(f"bpftrace exited {r.returncode}:\n{err}")
        sys.exit(1)
    return r.stdout, err

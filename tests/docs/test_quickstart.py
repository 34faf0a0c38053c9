#!/usr/bin/env python3
"""The README's quick-start trace line works as written on a service built
the README's way (probes in the executable and in libbillingprobes.so):
the line is read from README.md and run by bash, with billing-probes on
PATH, against a program named your-service; the seconds tps prints add up
to every transaction the program finished.  your-service is a private copy
of the program and its library (bt.private_copy): the trace attaches to
those files, so no other test's process running the build's is traced.

usage: test_quickstart.py README YOUR_SERVICE BILLING_PROBES"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

readme, service, tool = sys.argv[1:4]
bt.require_tracing("bpftrace")
lines = re.findall(r"^(sudo billing-probes trace .*?)\s*(?:#.*)?$", open(readme).read(), re.M)
bt.check(len(lines) == 1, "README.md has one quick-start trace line: %s" % lines)
command = lines[0]
bt.check('pgrep -o -x your-service' in command and " tps " in command,
         "it traces tps on the process pgrep picks: %s" % command)

private = tempfile.TemporaryDirectory(prefix="bp-quickstart-")
bindir = os.path.join(private.name, "bin")
os.makedirs(bindir)
copy = bt.private_copy(service, os.path.join(private.name, "service"))
library = bt.loaded_library(copy, "libbillingprobes.so")
bt.check(library.startswith(os.path.realpath(private.name) + os.sep), "your-service loads its own library (%s)" % library)
for name, target in (("billing-probes", os.path.abspath(tool)), ("your-service", copy)):
    os.symlink(target, os.path.join(bindir, name))
env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
command = command[len("sudo "):]  # root already (and sudo would reset PATH)

svc = subprocess.Popen([os.path.join(bindir, "your-service")], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
trace = subprocess.Popen(["bash", "-c", command], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
out, started = [], threading.Event()


def counted(lines):
    """(transactions, failed) summed over the seconds tps printed."""
    seconds = [(int(m.group(1)), int(m.group(2)))
               for m in re.finditer(r"^\d\d:\d\d:\d\d\s+(\d+)\s+(\d+)", "\n".join(lines), re.M)]
    return sum(t for t, _ in seconds), sum(f for _, f in seconds)


def read():
    for line in trace.stdout:
        out.append(line.rstrip("\n"))
        if line.startswith("Tracing"):
            started.set()


threading.Thread(target=read, daemon=True).start()
try:
    if not bt.check(started.wait(120), "the README's line started tracing"):
        print("\n".join(out))
    svc.stdin.write("go\n")
    svc.stdin.flush()
    fired = int(svc.stdout.readline().split()[1])
    # tps prints each second once it is over; its END skips a second not
    # printed yet: stop once the printed seconds hold every transaction.
    deadline = time.monotonic() + 60
    while counted(out)[0] < fired and time.monotonic() < deadline and trace.poll() is None:
        time.sleep(0.1)
    os.killpg(trace.pid, signal.SIGINT)
    bt.interrupt_bpftrace(trace, 60, already_sent=True)
finally:
    if trace.poll() is None:
        os.killpg(trace.pid, signal.SIGKILL)
        trace.wait()
    svc.stdin.close()
    svc.wait(10)
print("\n".join(out))
total, failed = counted(out)
bt.check(total == fired, "tps counted %d of %d transactions (both modules)" % (total, fired))
bt.check(failed == fired // 20, "tps counted %d failed, want %d" % (failed, fired // 20))
bt.finish()

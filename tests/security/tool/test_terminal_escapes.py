"""Attack 7 of issue 20 (terminal output): text another user controls
reaching root's terminal raw.

The attacker loads a copy of a library carrying the billing probes from a
directory whose name holds escape sequences (ESC ] 0 ; ... BEL retitles
the terminal, ESC [ 2 J clears it), then fires invoice-create with such a
currency.  Before, `list PID` printed the path's bytes raw, and trace
passed the currency through from bpftrace raw.  Now every command prints
them as \\xNN: list's table, trace's lines and bpftrace's output passed
through (newlines and tabs kept).
"""
import os
import subprocess

from sectest import (PYTHON, LIB_ALL, LOADER_ENV, attacker_dir, check, finish, kill_all, need_probes, remove, tool)
import billingtest as bt

need_probes()

SEQ = "\x1b]0;owned\x07\x1b[2J"
ESCAPED = b"\\x1b]0;owned\\x07\\x1b[2J"


def raw_controls(data):
    """The control bytes in data other than newline and tab."""
    return sorted({b for b in data if (b < 0x20 and b not in (0x0a, 0x09)) or b == 0x7f})


# loads the library, fires invoice-create with the currency on "fire"
FIRER = ("import ctypes, sys\n"
         "lib = ctypes.CDLL(sys.argv[1])\n"
         "print('loaded', flush=True)\n"
         "for line in sys.stdin:\n"
         "    for i in range(5):\n"
         "        lib.billing_fire_invoice_create(ctypes.c_ulonglong(i + 1), ctypes.c_ulonglong(7),\n"
         "                                        ctypes.c_longlong(100), sys.argv[2].encode('latin-1'))\n"
         "    print('fired', flush=True)\n")

uid, gid, prefix, evil = attacker_dir()
procs = []
try:
    lib = os.path.join(evil, SEQ + "x", "libbillingprobes.so")
    subprocess.run(prefix + ["sh", "-c", 'mkdir -p "$(dirname "$2")" && cp "$1" "$2"', "sh", LIB_ALL, lib], check=True)
    holder = subprocess.Popen(prefix + [PYTHON, "-c", FIRER, lib, SEQ], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=LOADER_ENV)
    procs.append(holder)
    check(holder.stdout.readline().strip() == b"loaded", "the attacker's process maps a path holding escapes")
    pid = str(holder.pid)

    rc, out, err = tool(["list", pid])
    print("list: exit %d, %d bytes; stderr %r" % (rc, len(out), err[:200]))
    check(rc == 0 and not raw_controls(out + err), "list PID: no raw control byte (%s)" % raw_controls(out + err))
    check(ESCAPED in out, "list PID: the path shown escaped")

    rc, out, err = tool(["trace", "tps", "-p", pid, "--dry-run"])
    check(not raw_controls(out + err) and ESCAPED in err,
          "trace on that module: its one line escaped (%d %r)" % (rc, err[:300]))

    # bpftrace's output: the currency the attacker fired
    if bt.why_no_tracing():
        print("SKIP part: %s" % bt.why_no_tracing())
    else:
        safe = os.path.join(evil, "plain", "libbillingprobes.so")
        subprocess.run(prefix + ["sh", "-c", 'mkdir -p "$(dirname "$2")" && cp "$1" "$2"', "sh", LIB_ALL, safe],
                       check=True)
        firer = subprocess.Popen(prefix + [PYTHON, "-c", FIRER, safe, SEQ], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, env=LOADER_ENV)
        procs.append(firer)
        check(firer.stdout.readline().strip() == b"loaded", "the attacker's process fires from a plain path")
        trace = subprocess.Popen([os.environ["BP_TOOL"], "trace", "biz_metrics", "-p", str(firer.pid), "--", "1"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(trace)

        head = b""
        while True:  # bpftrace's "Attaching ...", then BEGIN's line
            line = trace.stdout.readline()
            head += line
            if not line or line.startswith(b"Tracing"):
                break
        check(head.endswith(b"\n") and b"Tracing" in head, "trace biz_metrics started (%r)" % head[-200:])
        firer.stdin.write(b"fire\n")
        firer.stdin.flush()
        check(firer.stdout.readline().strip() == b"fired", "the attacker fired invoice-create 5 times")
        firer.stdin.close()
        firer.wait(10)
        try:
            out, err = trace.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            trace.kill()
            out, err = trace.communicate()
        out = head + out
        print("trace: exit %d\n%s\nstderr %r" % (trace.returncode, out.decode("latin-1")[-1500:], err[-300:]))
        check(ESCAPED in out, "trace biz_metrics: the attacker's currency reached the output, escaped")
        check(not raw_controls(out), "trace biz_metrics: no raw control byte (%s)" % raw_controls(out))
finally:
    kill_all(procs)
    remove(evil)
finish()

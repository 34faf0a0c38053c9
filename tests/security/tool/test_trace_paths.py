"""Attack 1 of issue 20: module paths from /proc/PID/maps written into the
bpftrace program root runs.

The attacker loads a copy of a library carrying the billing probes from a
directory whose name is bpftrace program text (the issue's own: a clause
that reads a file and exits, a uretprobe on bash's readline), then root
runs `trace tps -p PID`.  Before, the module was either pasted into the
program (the file printed, the trace stopped after 1 s, TXNS 0 shown) or
left out while bpftrace ran on with nothing attached: totals of 0 for a
process that fired.  Now: one line naming the path (escaped), exit 2,
bpftrace never started.  A plain '"' in a path: the same with --dry-run.
A safe copy beside an unsafe one: the unsafe one is left out with one
line, the program attaches to the safe one only.  Here the file to steal
is a root-only canary, not /etc/shadow.
"""
import os
import secrets

from sectest import (Holder, attacker_dir, check, finish, lines, need_probes, remove, root_dir, tool, tool_while)
import billingtest as bt

need_probes()
bt.require_tracing()

uid, gid, prefix, base = attacker_dir()
secret_dir = root_dir()
holders = []
try:
    canary = os.path.join(secret_dir, "canary")
    secret = "canary-" + secrets.token_hex(8)
    with open(canary, "w") as f:
        f.write(secret + "\n")
    os.chmod(canary, 0o600)

    # the directory: its '/'s make it several directories
    evil = os.path.join(base, 'q:billing:transaction__done {} interval:s:1 { printf("INJECTED\\n"); cat("'
                        + canary + '"); exit(); } uretprobe:/bin/bash:readline { printf("%s\\n", str(retval)); } usdt:',
                        "libbillingprobes.so")
    h = Holder(prefix, [evil])
    holders.append(h)
    check(h.ok, "the attacker's process maps %r" % evil)
    rc, out, err = tool_while(h, ["trace", "tps", "-p", str(h.pid)], seconds=5)
    h.stop()
    text = out.decode("latin-1")
    print("exit %d\nstdout: %r\nstderr: %r" % (rc, text[-400:], err[-600:]))
    check(secret not in text and b"INJECTED" not in out, "the canary is never printed, no injected clause ran")
    check(rc == 2, "trace refuses (exit 2, was %d)" % rc)
    check(len(lines(err)) == 1 and b"refused" in err and b"q:billing:transaction__done {} interval:s:1" in err,
          "one line on stderr, naming the path (%r)" % err[-300:])
    check("TXNS" not in text, "no bpftrace output: no totals of 0 for a process that was never traced")

    # a plain '"': a program that cannot parse
    quote = os.path.join(base, 'quote"dir', "libbillingprobes.so")
    h = Holder(prefix, [quote])
    holders.append(h)
    check(h.ok, "the attacker's process maps %r" % quote)
    rc, out, err = tool(["trace", "tps", "-p", str(h.pid), "--dry-run"])
    h.stop()
    print("exit %d\nstderr: %r" % (rc, err))
    check(rc == 2 and len(lines(err)) == 1 and b'quote"dir' in err and b"refused" in err,
          "a '\"' in the only module's path: refused with one line naming it, exit 2 (%d %r)" % (rc, err))
    check(b"quote" not in out, "nothing of the path on stdout")

    # an unsafe path beside a safe one: the safe one traced, one line
    safe = os.path.join(base, "safe", "libbillingprobes.so")
    h = Holder(prefix, [safe, quote])
    holders.append(h)
    check(h.ok, "the attacker's process maps both copies")
    rc, out, err = tool(["trace", "tps", "-p", str(h.pid), "--dry-run"])
    h.stop()
    print("exit %d\nstderr: %r" % (rc, err))
    check(rc == 0 and len(lines(err)) == 1 and b"left out" in err and b'quote"dir' in err,
          "with a safe module left: the unsafe one left out with one line, exit 0 (%d %r)" % (rc, err))
    check(("usdt:" + safe + ":billing:transaction__done").encode() in out and b"quote" not in out,
          "the program attaches to the safe copy only")
finally:
    for h in holders:
        h.stop()
    remove(base)
    remove(secret_dir)
finish()

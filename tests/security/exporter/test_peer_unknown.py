#!/usr/bin/env python3
"""A loopback client that sends and closes at once is an unknown peer,
never uid 0 (issue 46, finding 3).  The kernel keeps the closed end as a
timewait mini-socket and reports it over inet_diag with uid 0 and inode 0;
the exporter counted such a client as root, so the unprivileged user's
wrong passwords, sent and closed at once, spent root's budget of failed
logins and root's first logins got 429.

peer_closed (meson passes it) links the exporter's peer.c and asks it who
20 clients are whose sockets closed before the lookup, and 20 that stayed
open, on 127.0.0.1 and on ::1, run as the unprivileged test user (half the closed ones looked up at once,
half after the server's delayed ACK has made them timewait mini-sockets):
the closed ones must be unknown (refused), the open ones that user.
Before: the closed ones were that user when looked up at once (an orphaned
socket keeps its uid) and uid 0 after the delayed ACK."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sectest import bt  # noqa: E402

if len(sys.argv) < 2 or not os.path.exists(sys.argv[1]):
    bt.skip("peer_closed is not built (meson test passes it)")
uid, _, as_attacker = bt.attacker()
r = bt.run([*as_attacker, sys.argv[1]], timeout=60)
print(r.stdout + r.stderr)
for where in ("127.0.0.1", "::1"):
    line = [x for x in r.stdout.splitlines() if x.startswith(where + ":")]
    bt.check(bool(line) and " 20 of 20 open clients named as uid %d;" % uid in line[0]
             and "20 of 20 clients closed before the lookup unknown" in line[0],
             "%s, as uid %d: %s" % (where, uid, line[0] if line else "no answer"))
bt.check(r.returncode == 0 and "wrong:" not in r.stdout, "peer_closed found nothing wrong (exit %d)" % r.returncode)
bt.finish()

#!/usr/bin/env python3
"""An Accept header costs what its length costs, and no more than
BX_ACCEPT_MAX_BYTES of it is read (issue 46, finding 8).  The exporter
looked for each media type with strstr() and, for every place it was
found, searched the rest of the header again for its parameters: a crafted
28.8 kB Accept (CRAFTED) cost the exporter 5 times the CPU of a request
with a harmless header as long.

The unprivileged test user sends REQUESTS scrapes of /metrics with the
crafted Accept, and as many with an Accept of one entry and a harmless
header of the same length beside it (what reading 28.8 kB costs anyway),
on one kept-alive connection each, and reads the exporter's CPU ticks
(/proc/PID/stat, utime + stime) around each batch: the crafted batch may
cost at most twice the other and SLACK_TICKS more.  CPU time of the
exporter alone, not wall time: ticks spent beside other tests are not
counted.  Before: 11 times the other batch's ticks and more."""
import http.client
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

bt.require_root("acting as another local user")
exe = h.env_path("BX_EXPORTER")
REQUESTS = 200
SLACK_TICKS = 10
# 450 protobuf entries, then "pr" to 28.8 kB: each entry sent the old
# parser through the rest of the header once more, over a text where
# strstr() finds a candidate every two bytes
CRAFTED = ("application/vnd.google.protobuf," * 450 + "pr" * 14400)[:28800]
st.check_documented(["BX_ACCEPT_MAX_BYTES"])


def attack(report, port, pid):
    def ticks():
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime

    def batch(headers):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        before, statuses = ticks(), set()
        for _ in range(REQUESTS):
            c.request("GET", "/metrics", headers=headers)
            r = c.getresponse()
            r.read()
            statuses.add(r.status)
        used = ticks() - before
        c.close()
        return used, sorted(statuses)
    plain = batch({"Accept": "text/plain;version=0.0.4", "X-Pad": "p" * len(CRAFTED)})
    crafted = batch({"Accept": CRAFTED})
    report({"plain": plain, "crafted": crafted})


with tempfile.TemporaryDirectory() as tmp:
    os.chmod(tmp, 0o755)
    ex = h.Exporter(exe, *st.stats_only_args(tmp))
    try:
        who = st.AsAttacker(attack, ex.port, ex.proc.pid)
        got = who.wait("the attacker's two batches", lambda r: "crafted" in r, timeout=240)
        who.stop()
    finally:
        ex.stop()
(plain, plain_status), (crafted, crafted_status) = got["plain"], got["crafted"]
print("exporter CPU ticks for %d scrapes: %d with a one-entry Accept beside %d bytes of another header, "
      "%d with the crafted %d-byte Accept" % (REQUESTS, plain, len(CRAFTED), crafted, len(CRAFTED)))
bt.check(plain_status == [200] and crafted_status == [200], "every scrape answered 200 (%s, %s)"
         % (plain_status, crafted_status))
bt.check(crafted <= 2 * plain + SLACK_TICKS,
         "the crafted Accept costs the exporter %d ticks for %d scrapes, at most twice the %d of a header as long, "
         "plus %d" % (crafted, REQUESTS, plain, SLACK_TICKS))
bt.finish()

#!/usr/bin/env python3
"""A flood of wrong passwords does not keep a correct first login out
(issue 34, finding 4).  The unprivileged local user of
billingtest.attacker() runs 8 threads that each send a new wrong password
per request to the exporter's port, from before the exporter starts; the
exporter then starts with basic auth for 20 users, and Prometheus (root,
on the same 127.0.0.1) logs in as each user in turn: each login is a
first one (no cached success helps), and all 20 must answer 200.

On the code before (one bcrypt at a time for everyone, the rest 429) the
flood kept that one check busy and the scraper got 429.  Now each peer
(the attacker is a local user, known to the kernel by its socket) has a
budget of failed checks and a peer without recent failures checks in a
slot of its own.  Needs root only to act as the attacker: the exporter's
target is an empty --stats-dir."""
import base64
import os
import random
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

THREADS, USERS, SCRAPE_TIMEOUT = 8, 20, 10
exe = h.env_path("BX_EXPORTER")


def request(port, user, password, timeout=10):
    """The status of GET /metrics with these credentials; 0 without an answer."""
    auth = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(("GET /metrics HTTP/1.0\r\nAuthorization: Basic %s\r\n\r\n" % auth).encode())
        head = s.recv(64)
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def flood(report, port, seconds):
    """THREADS threads, a new wrong password per request; reports that it
    started, the first answer, then the statuses counted every second."""
    counts, lock, stop = {}, threading.Lock(), time.monotonic() + seconds
    tallied = [time.monotonic()]

    def one():
        while time.monotonic() < stop:
            try:
                status = request(port, "scraper0", "guess-%d" % random.getrandbits(64))
            except OSError:
                status = "refused"
                time.sleep(0.01)  # not listening yet
            with lock:
                first = not any(k != "refused" for k in counts)
                counts[status] = counts.get(status, 0) + 1
                if first and status != "refused":
                    report({"answered": status})
                if time.monotonic() - tallied[0] >= 1:
                    tallied[0] = time.monotonic()
                    report({"tally": {str(k): v for k, v in counts.items()}})

    threads = [threading.Thread(target=one) for _ in range(THREADS)]
    for t in threads:
        t.start()
    report({"started": True})
    for t in threads:
        t.join()


st.check_documented(["BX_AUTH_CACHE_SECONDS", "BX_AUTH_FAILURE_BURST", "BX_AUTH_FAILURE_REFILL_SECONDS",
                     "CLEAN_WAIT_SECONDS", "BX_AUTH_PEERS"])
tmp = tempfile.mkdtemp(prefix="bx-authflood-")
os.chmod(tmp, 0o755)
passwords = ["correct-%d-%x" % (i, random.getrandbits(48)) for i in range(USERS)]
web = os.path.join(tmp, "web.yml")
with open(web, "w") as f:
    f.write("basic_auth_users:\n" + "".join("  scraper%d: %s\n" % (i, st.bt.bcrypt(p)) for i, p in enumerate(passwords)))
port = st.free_port()
attacker = st.AsAttacker(flood, port, 120)
ex = None
try:
    attacker.wait("the flood to start", lambda m: "started" in m)
    ex = h.Exporter(exe, *st.stats_only_args(tmp), "--web-config", web, listen="127.0.0.1:%d" % port)
    first = attacker.wait("the flood's first answer from the exporter", lambda m: "answered" in m, 30)
    bt.check(first["answered"] in (401, 429), "the flood is answered 401 or 429 (%s)" % first["answered"])
    got, slowest = [], 0.0
    for i in range(USERS):
        t0 = time.monotonic()
        try:
            got.append(request(port, "scraper%d" % i, passwords[i], timeout=SCRAPE_TIMEOUT))
        except OSError as e:
            got.append(str(e))
        slowest = max(slowest, time.monotonic() - t0)
    ok = sum(1 for s in got if s == 200)
    bt.check(ok == USERS, "%d of %d first logins during the flood answered 200 (statuses %s; slowest %.2f s)"
             % (ok, USERS, got, slowest))
    attacker.stop()
    tallies = [line for line in attacker.lines.rest(5) if '"tally"' in line]
    print("auth flood: %d of %d first logins 200, slowest %.3f s; the flood's answers: %s"
          % (ok, USERS, slowest, tallies[-1] if tallies else "none counted"))
    bt.check(ex.proc.poll() is None, "the exporter is still running")
finally:
    attacker.stop()
    rc, out = ex.stop() if ex else (0, "")
    shutil.rmtree(tmp, ignore_errors=True)
bt.check(rc == 0, "the exporter exits 0 on SIGTERM (rc=%s)" % rc)
bt.finish()

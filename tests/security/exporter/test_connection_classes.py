#!/usr/bin/env python3
"""Connection limits that bind a local user (issue 34, finding 5).  The
unprivileged local user of billingtest.attacker() holds slow connections
(one byte every 3 s, each one the server closes opened again):

- 5,000 from ten loopback addresses (127.0.1.2-11): a limit per address
  let it hold 10 x 512 and fill the server;
- 1,500 from 127.0.0.1, the prober's own address: a limit per address
  counted the prober with it.

Meanwhile a prober (root, from 127.0.0.1) asks /healthz and /metrics 20
times each: every answer must be 200 within 2 s.  Now a loopback client
is its socket's owner, whatever address it uses, limited as one peer, and
a peer holding few connections keeps a reserved share.  Needs root only
to act as the attacker: the exporter's target is an empty --stats-dir."""
import os
import resource
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sectest as st  # noqa: E402
from sectest import bt, h  # noqa: E402

PROBES, ANSWER_WITHIN = 20, 2.0
exe = h.env_path("BX_EXPORTER")

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < 5000 + 500:
    bt.skip("the open-files limit (%d) is too low for 5,000 client sockets" % hard)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the attacker's and the exporter's


def probe(port):
    """(healthz answers, metrics answers, slowest) of PROBES tries each, 200 within ANSWER_WITHIN."""
    health = metrics = 0
    slowest = 0.0
    for _ in range(PROBES):
        t0 = time.monotonic()
        ok = st.healthz(port, timeout=ANSWER_WITHIN, source="127.0.0.1")
        took = time.monotonic() - t0
        health += 1 if ok and took <= ANSWER_WITHIN else 0
        t0 = time.monotonic()
        status, _ = st.get("http://127.0.0.1:%d/metrics" % port, timeout=ANSWER_WITHIN)
        metrics += 1 if status == 200 and time.monotonic() - t0 <= ANSWER_WITHIN else 0
        slowest = max(slowest, took, time.monotonic() - t0)
        time.sleep(0.25)  # a prober's period, not a wait for readiness
    return health, metrics, slowest


st.check_documented(["BX_CONN_RESERVE_DIVISOR", "BX_CONN_QUIET_PEER"])
tmp = tempfile.mkdtemp(prefix="bx-classes-")
ex = h.Exporter(exe, *st.stats_only_args(tmp))
attacker = None
try:
    for count, sources, what in [
            (5000, ["127.0.1.%d" % i for i in range(2, 12)], "5,000 slow connections from 127.0.1.2-11"),
            (1500, ["127.0.0.1"], "1,500 slow connections from the prober's own 127.0.0.1")]:
        attacker = st.AsAttacker(st.slow_clients, ex.port, count, sources, 120)
        held = attacker.wait("the attacker's connections", lambda m: "held" in m, 90)
        health, metrics, slowest = probe(ex.port)
        attacker.stop()
        bt.check(health == PROBES and metrics == PROBES,
                 "under %s (%d connected, %d refused): /healthz %d of %d, /metrics %d of %d answered 200 "
                 "within %.0f s (slowest %.2f s)" % (what, held["held"], held["refused"], health, PROBES,
                                                     metrics, PROBES, ANSWER_WITHIN, slowest))
        print("%s: /healthz %d/%d, /metrics %d/%d, slowest %.3f s"
              % (what, health, PROBES, metrics, PROBES, slowest))
    bt.check(ex.proc.poll() is None, "the exporter is still running")
finally:
    if attacker:
        attacker.stop()
    rc, out = ex.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.check(rc == 0, "the exporter exits 0 on SIGTERM (rc=%s)" % rc)
bt.finish()

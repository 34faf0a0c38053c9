#!/usr/bin/env python3
"""billing-exporter of the installed stats kit on the service built against
it (-Dstats=enabled), run as a user of its own (bp-userpath) with its
segments in its default directory, readable by its group
(BILLING_STATS_GROUP), compared with the service's books:

untraced (batches 1 and 2, a worker SIGKILLed and replaced between them):
- the README's timing pattern clocks every payment authorisation while
  stats are on (billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED())): each
  duration in the books measured, none 0;
- as nobody in the service's group: `--stats-dir` on the service's
  directory (every process, the killed worker's final counts kept) and
  `--pid W --source stats` for the three first workers (started once they
  have served: a forked worker makes its segment at its first event):
  every metric of billing.d, counters, amounts in full and histograms
  bucket by bucket, equal to the books of the processes each names;
- `--stats-dir DIR --pid W` (root): W counts once;
- a real Prometheus scraping the `--stats-dir` exporter answers the same.
traced (batches 3 and 4, another worker killed and replaced while
traced): a USDT exporter `--binary SERVICE` (root) counts
exactly those batches, the replacement forked while attached included;
one given `--stats-dir DIR` as well counts the same plus the final counts
of the worker killed before it started (a segment whose writer runs a
--binary program counts through USDT only; one whose writer was gone
before any --binary attached, from its segment); the stats figures stay
the books' (tracing changes no always-on metric).
After the service ends, the stats figures stay (final counts kept).

Needs root (a user of its own, nobody, USDT) and Prometheus."""
import fcntl
import os
import shutil
import tempfile

import userpathtest as up
from userpathtest import bt

up.require_work()
up.exportertest.require_exporter_can_run()
bt.require_program("prometheus", "prometheus")
kit = up.kits()["stats"]
uid, gid, as_service = bt.system_user("bp-userpath")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--groups=%d" % gid, "--"]
STATS_DIR = "/dev/shm/billing-stats-%d" % uid  # the library's default for that user (docs/stats.md)
PAY = "payment-auth"


def exporter(what, args, prefix=()):
    return up.start_exporter(kit, what, args, prefix)


def compare(ex, books, what):
    if ex is not None:
        up.compare_metrics(ex.samples(), up.expected_metrics(books), what)


# One run at a time owns the service user's default stats directory: it
# starts empty, so --stats-dir sees this run's processes only.
with open(os.path.join(up.WORK, ".stats-user.lock"), "a") as lock, kit.turn():
    fcntl.flock(lock, fcntl.LOCK_EX)
    shutil.rmtree(STATS_DIR, ignore_errors=True)
    books_dir = tempfile.mkdtemp(prefix="userpath-books-")
    os.chown(books_dir, uid, gid)
    os.chmod(books_dir, 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_STATS")}
    env["BILLING_STATS_GROUP"] = "bp-userpath"
    svc = up.Service(kit, books_dir, prefix=as_service, env=env)
    exporters, prom = [], None
    try:
        first = dict(svc.workers)
        by_dir = exporter("--stats-dir as nobody", ["--stats-dir", STATS_DIR], NOBODY)
        prom = up.prometheus({"stats-dir": by_dir} if by_dir else {})

        # --- untraced: a batch, a worker killed and replaced, a batch --------------
        svc.batch()
        # a forked worker makes its segment at its first event: --pid after it
        by_pid = exporter("--pid W x3 --source stats as nobody",
                          [a for w in first.values() for a in ("--pid", str(w))] + ["--source", "stats"], NOBODY)
        once = exporter("--stats-dir DIR --pid W (root)",
                        ["--stats-dir", STATS_DIR, "--pid", str(first[1]), "--source", "stats"])
        exporters += [e for e in (by_dir, by_pid, once) if e]
        svc.kill_worker(1)
        svc.batch()
        books = svc.books()
        auth = books.fires(PAY)
        bt.check(auth and all(f[-1] != 0 for f in auth),
                 "untraced, stats on: every payment authorisation clocked by the README's pattern "
                 "(%d of %d durations measured)" % (sum(1 for f in auth if f[-1] != 0), len(auth)))
        compare(by_dir, books, "untraced, --stats-dir as nobody")
        compare(by_pid, books.only(pids=set(first.values())), "untraced, --pid x3 --source stats as nobody")
        compare(once, books, "untraced, --stats-dir + --pid W")
        if by_dir:
            up.prometheus_agrees(prom, {"stats-dir": (by_dir, books)})

        # --- traced: the USDT exporter on the same service --------------------------
        binaries = ["--binary", kit.service]
        usdt = exporter("--binary SERVICE (USDT, root)", binaries)
        both = exporter("--stats-dir DIR --binary SERVICE (root)", ["--stats-dir", STATS_DIR] + binaries)
        exporters += [e for e in (usdt, both) if e]
        traced_batches = {svc.batch()}
        svc.kill_worker(2)
        traced_batches.add(svc.batch())
        books = svc.books()
        auth = books.only(batches=traced_batches).fires(PAY)
        bt.check(all(f[-1] != 0 for f in auth), "traced: every payment authorisation clocked (%d of %d)"
                 % (sum(1 for f in auth if f[-1] != 0), len(auth)))
        compare(usdt, books.only(batches=traced_batches), "traced batches, USDT --binary")
        compare(both, books.only(batches=traced_batches).plus(books.only(pids={first[1]})),
                "traced batches, and the worker gone before, --stats-dir + --binary")
        compare(by_dir, books, "traced and untraced, --stats-dir as nobody")
        compare(by_pid, books.only(pids=set(first.values())), "traced and untraced, --pid x3 as nobody")
        compare(once, books, "traced and untraced, --stats-dir + --pid W")
        rc = svc.stop()
        bt.check(rc == 0, "the service ends cleanly (exit %s)" % rc)
        compare(by_dir, svc.books(), "the service gone: --stats-dir keeps its final counts")
        if by_dir:
            up_now = up.exportertest.total(by_dir.samples(), "billing_exporter_target_up")
            bt.check(up_now == 0, "the service gone: --stats-dir's target_up 0 (%s)" % up_now)
    finally:
        svc.stop()
        for ex in exporters:
            ex.stop()
        if prom:
            prom.cleanup()
        shutil.rmtree(STATS_DIR, ignore_errors=True)
        shutil.rmtree(books_dir, ignore_errors=True)
bt.finish()

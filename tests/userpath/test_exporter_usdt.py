#!/usr/bin/env python3
"""billing-exporter of the installed plain kit (USDT, root) on the service
built against it, compared with the service's books, with a real
Prometheus scraping it:

- `--binary SERVICE`, the README's way to count a pre-fork service: its
  probes and those of the library it loads, in every process running it, a
  worker SIGKILLed and the replacement forked while attached counted too;
- `--pid` of the parent and the three workers: those four processes, the
  killed worker's counts kept, the replacement (not named) not counted;
- `--binary SERVICE --pid W`, and `--binary SERVICE --binary LIB`: W, or
  the library's probes, would count twice, so each is refused in one line,
  exit 2 (docs/stats.md, "One process counts once").
Every metric of billing.d: counters, amounts in full, histograms bucket by
bucket (the timing helpers clock while their -done probe is traced, so
every duration of these batches is measured and observed).

Needs root and Prometheus."""
import shutil
import tempfile

import userpathtest as up
from userpathtest import bt

up.require_work()
up.exportertest.require_exporter_can_run()
bt.require_program("prometheus", "prometheus")
kit = up.kits()["plain"]
BINARIES = ["--binary", kit.service]


def main():
    books_dir = tempfile.mkdtemp(prefix="userpath-books-")
    svc = up.Service(kit, books_dir)
    exporters, prom = {}, None
    try:
        named = svc.pids()
        for what, extra in (("--binary SERVICE --pid W", ["--pid", str(svc.workers[0])]),
                            ("--binary SERVICE --binary LIB", ["--binary", kit.lib])):
            r = bt.run([kit.exporter, *BINARIES, *extra, "--once", "--interval", "1"], timeout=up.DEADLINE)
            lines = r.stderr.strip().splitlines()
            bt.check(r.returncode == 2 and len(lines) == 1 and "twice" in lines[0],
                     "%s: refused in one line, exit 2 (exit %d: %s)" % (what, r.returncode, lines[-3:]))
        for job, args in (("binary", BINARIES),
                          ("pids", [a for pid in named for a in ("--pid", str(pid))])):
            ex = up.start_exporter(kit, "%s: %s" % (job, " ".join(args)), args)
            if ex:
                exporters[job] = ex
        prom = up.prometheus(exporters)
        svc.batch()
        svc.kill_worker(1)
        svc.batch()
        books = svc.books()
        done = books.fires("request-done")
        bt.check(done and all(f[-1] != 0 for f in done), "every request's duration measured while traced (%d of %d)"
                 % (sum(1 for f in done if f[-1] != 0), len(done)))
        want = {"binary": books, "pids": books.only(pids=set(named))}
        for job, ex in exporters.items():
            up.compare_metrics(ex.samples(), up.expected_metrics(want[job]), "exporter %s" % job)
        up.prometheus_agrees(prom, {job: (ex, want[job]) for job, ex in exporters.items()})
        rc = svc.stop()
        bt.check(rc == 0, "the service ends cleanly (exit %s)" % rc)
    finally:
        svc.stop()
        shutil.rmtree(books_dir, ignore_errors=True)
        for ex in exporters.values():
            ex.stop()
        if prom:
            prom.cleanup()


with kit.turn():
    main()
bt.finish()

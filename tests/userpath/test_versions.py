#!/usr/bin/env python3
"""A service and billing-exporter built from different billing.d, read
through stats: the installed stats kit ("old") and one built from a copy
of billing.d with a team's own probe, coupon-apply, feeding a new
@@counter (billing_coupons_applied_total) and one more amount_minor bucket
(the histogram billing_transaction_amount_minor) ("new",
userpathtest.other_kit).  The service built against each kit runs two
batches; its books say what every exporter must serve:

- service new x exporter old: the new counter (a team's own metric, served
  by the stock installed exporter, which was not built with it) and every
  family the two billing.d share, exactly; the changed histogram, one line
  per segment, not served;
- service old x exporter new: the same, the other way round;
- both services under one (old) exporter: the shared families summed over
  both, the changed histogram from the old service alone, the new one's
  refused with one line per segment, nothing else said;
- the old kit's `billing-probes top --stats-dir` on the new service: the
  team's counter's change in an interval of one more batch, as its books
  count it (issue 45: top showed nothing of a team's own probe).

Needs root (the services' segments in directories of their own)."""
import os
import shutil
import subprocess
import tempfile

import userpathtest as up
from userpathtest import bt

up.require_work()
up.exportertest.require_exporter_can_run()
old_kit = up.kits()["stats"]
new_kit, new_ms = up.other_kit()
old_ms = up.PROVIDER.metrics
HIST = "billing_transaction_amount_minor"  # one more bucket in the new billing.d
NEW = "billing_coupons_applied_total"


def without_hist(want):
    return {k: v for k, v in want.items() if k[0] not in (HIST + "_bucket", HIST + "_count", HIST + "_sum")}


def summed(*wants):
    out = {}
    for w in wants:
        for k, v in w.items():
            out[k] = out.get(k, 0) + v
    return out


def run(kit, stats_dir, books_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_STATS")}
    env["BILLING_STATS_DIR"] = stats_dir
    svc = up.Service(kit, books_dir, workers=2, threads=2, env=env)
    svc.batch()
    svc.batch()
    return svc


def serve(kit, what, dirs):
    """The samples an exporter of kit serves over dirs, and what it said."""
    ex = up.start_exporter(kit, what, [a for d in dirs for a in ("--stats-dir", d)])
    if ex is None:
        return {}, ""
    try:
        samples = ex.samples()
    finally:
        _, log = ex.stop()
    return samples, log


def said_about(log, family, where):
    return [line for line in log.splitlines() if "family %s " % family in line and where in line]


tmp = tempfile.mkdtemp(prefix="userpath-versions-")
old_dir, new_dir = os.path.join(tmp, "old-stats"), os.path.join(tmp, "new-stats")
services = []
try:
    with old_kit.turn(), new_kit.turn():
        for kit, d in ((old_kit, old_dir), (new_kit, new_dir)):
            books = os.path.join(tmp, os.path.basename(d) + "-books")
            os.mkdir(books)
            services.append(run(kit, d, books))
        old_books, new_books = (s.books() for s in services)
        bt.check(new_books.fires("coupon-apply"), "the new service fired its own probe (%d coupons applied)"
                 % len(new_books.fires("coupon-apply")))
        want_old, want_new = up.expected_metrics(old_books, old_ms), up.expected_metrics(new_books, new_ms)

        got, log = serve(old_kit, "the old exporter on the new service", [new_dir])
        bt.check(any(k[0] == NEW for k in up.normalise(got)), "service new x exporter old: %s served" % NEW)
        up.compare_metrics(got, without_hist(want_new), "service new x exporter old (its own counter included)")
        segs = len([n for n in os.listdir(new_dir) if n.endswith(".stats")])
        said = said_about(log, HIST, new_dir)
        bt.check(len(said) == segs, "... %s refused, one line for each of its %d segments: %s" % (HIST, segs, said[:1]))

        got, log = serve(new_kit, "the new exporter on the old service", [old_dir])
        up.compare_metrics(got, without_hist(want_old), "service old x exporter new")
        segs = len([n for n in os.listdir(old_dir) if n.endswith(".stats")])
        said = said_about(log, HIST, old_dir)
        bt.check(len(said) == segs, "... %s refused, one line for each of its %d segments: %s" % (HIST, segs, said[:1]))

        got, log = serve(old_kit, "the old exporter on both services", [old_dir, new_dir])
        # sums divided once, as the exporter divides its summed cells
        both = without_hist(up.expected_metrics(old_books.plus(new_books), old_ms))
        want = summed(both, {k: v for k, v in want_old.items() if k not in both},
                      {k: v for k, v in want_new.items() if k[0] == NEW})
        up.compare_metrics(got, want, "both services, one old exporter: shared families summed, %s the old one's"
                           % HIST)
        others = [line for line in log.splitlines() if "family " in line and not said_about(line, HIST, new_dir)]
        bt.check(said_about(log, HIST, new_dir) and not said_about(log, HIST, old_dir) and not others,
                 "... only the new service's %s said (%d lines), nothing else" % (HIST, len(said_about(log, HIST, new_dir))))

        # the stock installed `top` on the new service: its own counter's
        # change in an interval holding one more batch, as its books count
        top = subprocess.Popen([old_kit.tool, "top", "--once", "--interval", "5", "--stats-dir", new_dir],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = top.stdout.readline()
        batch = services[1].batch()
        out, err = top.communicate(timeout=up.DEADLINE)
        rows = {l.split()[0]: l.split()[1:] for l in (first + out).splitlines() if l and not l.startswith("#")}
        coupons = len(services[1].books().only(batches={batch}).fires("coupon-apply"))
        bt.check(top.returncode == 0 and coupons and rows.get(NEW, [])[:1] == [str(coupons)],
                 "service new x the old kit's top: %s %d in an interval of one batch, as the books say (%d %r %r)"
                 % (NEW, coupons, top.returncode, rows.get(NEW), err.strip()[-300:]))
finally:
    for s in services:
        s.stop()
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

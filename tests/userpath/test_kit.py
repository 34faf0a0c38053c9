#!/usr/bin/env python3
"""The kit as a user installs it, and the service built against it: the
fixture of the userpath suite (userpathtest.kits(): this tree set up with
`meson setup --prefix`, built and installed, plain and -Dstats=enabled;
the service compiled with `cc service.c $(pkg-config --cflags --libs
billing-probes)` and an rpath to `pkg-config --variable=libdir`).  Started
first (its priority): the other userpath tests wait for the kits it builds.

Checks what the rest of the suite stands on: pkg-config from the installed
.pc; the service loads the installed libbillingprobes.so, not another
copy; its probes sit where the README says (its own macros in the
executable, the timing helpers' in the library); and one batch of its
schedule is in its books whole, with IDs above 2^32 and amounts above
2^31 (each process's books in one file, written whole)."""
import os
import shutil
import tempfile

import userpathtest as up
from userpathtest import bt

up.require_work()
SPAN_PROBES = {p.name for s in up.billing_d.spans(up.PROVIDER.probes) for p in (s.start, s.done)}
ALL_PROBES = {p.name for p in up.PROVIDER.probes}


def check_kit(variant, kit):
    what = "%s kit" % variant
    bt.check(kit.pkg_env is not None and os.path.isfile(kit.tool) and os.path.isfile(kit.exporter),
             "%s: installed billing-probes.pc, bin/billing-probes, bin/billing-exporter under %s"
             % (what, kit.prefix))
    bt.check(kit.libdir.startswith(kit.prefix) and os.path.isfile(kit.lib),
             "%s: pkg-config --variable=libdir names the installed library's directory (%s)" % (what, kit.libdir))
    ldd = bt.run(["ldd", kit.service]).stdout
    loaded = [l.split("=>")[1].split()[0] for l in ldd.splitlines() if "libbillingprobes" in l and "=>" in l]
    bt.check(len(loaded) == 1 and os.path.realpath(loaded[0]) == kit.lib,
             "%s: the service loads the installed libbillingprobes.so through its rpath (%s)" % (what, loaded))
    in_exe = {n.replace("__", "-") for n in bt.sdt_notes(kit.service)}
    in_lib = {n.replace("__", "-") for n in bt.sdt_notes(kit.lib)}
    bt.check(in_exe == ALL_PROBES - SPAN_PROBES and SPAN_PROBES <= in_lib,
             "%s: the service's own probes in the executable (%s), the timing helpers' in the library (%s)"
             % (what, sorted(in_exe), sorted(in_lib & SPAN_PROBES)))

    books_dir = tempfile.mkdtemp(prefix="userpath-books-")
    env = dict(os.environ, BILLING_STATS="off")  # only the books matter here
    svc = up.Service(kit, books_dir, env=env)
    try:
        b = svc.batch()
        rc = svc.stop()
        books = svc.books()
        bt.check(rc == 0 and sorted(w[3] for w in books.workers) == [[b]] * 3,
                 "%s: parent and 3 workers end on end of input (exit %s), each worker's books "
                 "hold batch %d" % (what, rc, b))
        # the schedule: per thread, two rounds of 8 requests
        requests = books.fires("request-done")
        bt.check(len(requests) == 3 * 2 * up.OPS and len(books.fires("request-start")) == len(requests),
                 "%s: %d requests in the books (3 workers x 2 threads x %d)" % (what, len(requests), up.OPS))
        ids = [r[0] for r in requests]
        amounts = [f[1] for f in books.fires("payment-auth")] + [f[2] for f in books.fires("invoice-create")]
        bt.check(len(set(ids)) == len(ids) and min(ids) > 1 << 32,
                 "%s: request IDs unique and above 2^32 (min %#x)" % (what, min(ids)))
        bt.check(max(amounts) > 1 << 32 and sum(a > 1 << 31 for a in amounts) >= 6,
                 "%s: amounts above 2^31 (%d of %d, max %d)" % (what, sum(a > 1 << 31 for a in amounts),
                                                                len(amounts), max(amounts)))
        outcomes = {f[4] for f in books.fires("payment-auth")}
        bt.check({0, 51, 5} <= outcomes and books.fires("refund-process") and books.fires("error"),
                 "%s: approved and declined payments (%s), refunds, errors" % (what, sorted(outcomes)))
    finally:
        svc.stop()
        shutil.rmtree(books_dir, ignore_errors=True)


up.check_each_kit(check_kit)

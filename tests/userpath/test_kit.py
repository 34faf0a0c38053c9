#!/usr/bin/env python3
"""The kit as a user installs it, and the service built against it: the
fixture of the userpath suite (userpathtest.kits(): this tree set up with
`meson setup --prefix`, built and installed once; the service compiled
with `cc service.c $(pkg-config --cflags --libs MODULE)` and an rpath to
`pkg-config --variable=libdir`, once for each module: billing-probes and
billing-probes-stats).  Started first (its priority): the other userpath
tests wait for the kit it builds.

One kit installs both libraries, so turning stats on is a relink against
the other module, not a second kit: both .pc files in the one prefix, the
stats one's Cflags carrying what its probe macros need; the service built
against billing-probes-stats loads libbillingprobes-stats.so and each of
its processes writes its segment, while the one built against
billing-probes loads libbillingprobes.so and writes none.  (On the code
before, a kit had one library, chosen by -Dstats when it was built: the
stats service needed a second kit.)

The examples build as a user's programs do: billingd (against each
module) and billing-load compiled out of tree from their own files, with
pkg-config naming the kit and their third-party libraries and nothing else
of this tree, and their --help runs.  (On the code before, they needed
tools/options, which the kit does not install.)

Checks what the rest of the suite stands on: pkg-config from the installed
.pc; the service loads the installed libbillingprobes.so, not another
copy; its probes sit where the README says (its own macros in the
executable, the timing helpers' in the library); and one batch of its
schedule is in its books whole, with IDs above 2^32 and amounts above
2^31 (each process's books in one file, written whole)."""
import glob
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
             "%s: installed %s.pc, bin/billing-probes, bin/billing-exporter under %s"
             % (what, kit.module, kit.prefix))
    bt.check(kit.libdir.startswith(kit.prefix) and os.path.isfile(kit.lib),
             "%s: pkg-config --variable=libdir names the installed library's directory (%s)" % (what, kit.libdir))
    ldd = bt.run(["ldd", kit.service]).stdout
    loaded = [l.split("=>")[1].split()[0] for l in ldd.splitlines() if "libbillingprobes" in l and "=>" in l]
    bt.check(len(loaded) == 1 and os.path.realpath(loaded[0]) == kit.lib,
             "%s: the service loads the installed %s through its rpath (%s)" % (what, kit.soname, loaded))
    in_exe = {n.replace("__", "-") for n in bt.sdt_notes(kit.service)}
    in_lib = {n.replace("__", "-") for n in bt.sdt_notes(kit.lib)}
    bt.check(in_exe == ALL_PROBES - SPAN_PROBES and SPAN_PROBES <= in_lib,
             "%s: the service's own probes in the executable (%s), the timing helpers' in the library (%s)"
             % (what, sorted(in_exe), sorted(in_lib & SPAN_PROBES)))

    check_segments(variant, kit)
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


def check_one_kit(kits):
    """Both modules from one install: one prefix, both .pc files, the stats
    module's Cflags with the stats macros' switch and the plain one's without."""
    plain, stats = kits["plain"], kits["stats"]
    found = glob.glob(os.path.join(plain.prefix, "**", "pkgconfig", "*.pc"), recursive=True)
    pcs = sorted(os.path.basename(p) for p in found)
    bt.check(plain.prefix == stats.prefix and pcs == ["billing-probes-stats.pc", "billing-probes.pc"],
             "one installed kit holds both modules (%s under %s)" % (pcs, plain.prefix))
    if plain.pkg_env is None or stats.pkg_env is None:
        return
    cflags = {v: k.pkg_config("--cflags").split() for v, k in kits.items()}
    libs = {v: k.pkg_config("--libs").split() for v, k in kits.items()}
    bt.check("-DBILLING_STATS_FORCE" in cflags["stats"] and "-DBILLING_STATS_FORCE" not in cflags["plain"],
             "billing-probes-stats' Cflags turn the stats macros on, billing-probes' do not (%s; %s)"
             % (cflags["stats"], cflags["plain"]))
    bt.check("-lbillingprobes-stats" in libs["stats"] and "-lbillingprobes" in libs["plain"] and
             "-lbillingprobes" not in libs["stats"],
             "each module links its own library (%s; %s)" % (libs["stats"], libs["plain"]))
    bt.check(plain.libdir == stats.libdir and plain.lib != stats.lib and os.path.isfile(stats.lib),
             "both libraries installed side by side in %s" % plain.libdir)


# each example: its folder, the pkg-config modules of its libraries, the
# kit's variants it is built against (billing-load fires no probe: none)
EXAMPLES = {"billingd": ("billingd", ["libmicrohttpd", "jansson", "sqlite3"], ["plain", "stats"]),
            "billing-load": ("billing-load", ["libcurl", "jansson"], [None])}


def check_examples(kits):
    work = tempfile.mkdtemp(prefix="userpath-examples-")
    examples = os.path.join(up.SOURCE_ROOT, "examples")
    try:
        for name, (folder, libs, variants) in EXAMPLES.items():
            sources = sorted(glob.glob(os.path.join(examples, folder, "*.c")))
            sources.append(os.path.join(examples, "common", "cli.c"))
            for variant in variants:
                kit = kits[variant or "plain"]
                module, soname = (kit.module, kit.soname) if variant else (None, None)
                what = "%s out of tree, against %s" % (name, " ".join(filter(None, [module] + libs)))
                r = bt.run(["pkg-config", "--cflags", "--libs"] + list(filter(None, [module] + libs)),
                           env=kit.pkg_env)
                if r.returncode != 0:
                    bt.check(False, "%s: pkg-config: %s" % (what, r.stderr.strip()))
                    continue
                exe = os.path.join(work, "%s-%s" % (name, variant or "alone"))
                r = bt.run(["cc", "-std=gnu11", "-O0", "-Wall", "-Wextra", "-Werror", "-pthread",
                            "-I" + os.path.join(examples, "common")] + sources + r.stdout.split() +
                           ["-lm", "-o", exe, "-Wl,-rpath," + kit.libdir], timeout=600)
                if r.returncode != 0:
                    bt.check(False, "%s: builds (%s)" % (what, (r.stdout + r.stderr).strip()[-600:]))
                    continue
                h = bt.run([exe, "--help"])
                ldd = bt.run(["ldd", exe]).stdout
                bt.check(h.returncode == 0 and h.stdout.startswith("usage: %s " % name) and
                         (soname is None or soname in ldd),
                         "%s: builds, %s, --help runs (exit %d)"
                         % (what, "loads " + soname if soname else "no kit library", h.returncode))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_segments(variant, kit):
    """The stats service's processes each write a segment, the plain one's none."""
    what = "%s kit" % variant
    books_dir = tempfile.mkdtemp(prefix="userpath-books-")
    stats_dir = os.path.join(tempfile.mkdtemp(prefix="userpath-segments-"), "stats")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_STATS")}
    env["BILLING_STATS_DIR"] = stats_dir
    svc = up.Service(kit, books_dir, workers=2, env=env)
    try:
        svc.batch()
        workers = sorted(svc.workers.values())
        segments = sorted(int(os.path.basename(p).split(".")[0])
                          for p in glob.glob(os.path.join(stats_dir, "*.stats")))
        if variant == "stats":
            bt.check(set(workers) <= set(segments),
                     "%s: each worker writes its segment in BILLING_STATS_DIR (workers %s, segments %s)"
                     % (what, workers, segments))
        else:
            bt.check(not segments, "%s: no segment written (%s)" % (what, segments))
        bt.check(svc.stop() == 0, "%s: the service ends cleanly" % what)
    finally:
        svc.stop()
        shutil.rmtree(books_dir, ignore_errors=True)
        shutil.rmtree(os.path.dirname(stats_dir), ignore_errors=True)


check_one_kit(up.kits())
check_examples(up.kits())
up.check_each_kit(check_kit)

#!/usr/bin/env python3
"""The CMake way of docs/building.md, as written, against each module of
the installed kit (the stats one named billing-probes-stats where the
page names billing-probes): the page's CMakeLists.txt block and the independent service
(service.c, as your-service.c) configured with cmake (the kit found
through pkg-config), built, `cmake --install`ed into a prefix of its own,
and the installed program run without LD_LIBRARY_PATH:

- the same file without its INSTALL_RPATH line: the installed program
  does not start, the loader naming libbillingprobes.so.0 (or
  libbillingprobes-stats.so.0; what the page
  warns of: `cmake --install` drops the build tree's rpath);
- as written: it starts and loads the kit's libbillingprobes.so.0;
  `billing-probes list` of the installed file shows every probe of
  billing.d (the helpers' in the library it loads); and it is counted
  exactly against its books: through USDT by `billing-exporter --binary`
  (the plain kit, root), from its stats segments by `billing-exporter
  --stats-dir` (the stats kit, no root).

On the code before, docs/building.md covered meson only: no CMake block."""
import os
import re
import shutil
import subprocess
import tempfile

import userpathtest as up
from userpathtest import bt

up.require_work()
bt.require_program("cmake", "cmake")
PAGE = os.path.join(up.SOURCE_ROOT, "docs", "building.md")
RPATH_LINE = re.compile(r"^.*INSTALL_RPATH.*\n", re.M)


def page_block():
    text = open(PAGE, encoding="utf-8").read()
    blocks = re.findall(r"```cmake\n(.*?)```", text, re.S)
    bt.check(len(blocks) == 1 and RPATH_LINE.search(blocks[0] if blocks else ""),
             "docs/building.md shows one CMakeLists.txt, with an INSTALL_RPATH (%d blocks)" % len(blocks))
    return blocks[0] if blocks else None


def for_module(block, kit):
    """The page's block for KIT's module: billing-probes is the plain one."""
    return re.sub(r"\bbilling-probes\b(?![-.\w])", kit.module, block)


def cmake_install(kit, cmakelists, work):
    """The project built and installed; the installed program's path, or
    None with a failed check saying why."""
    src, build, prefix = (os.path.join(work, n) for n in ("src", "build", "prefix"))
    os.makedirs(src)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(cmakelists)
    shutil.copy(up.SERVICE_C, os.path.join(src, "your-service.c"))
    for cmd in (["cmake", "-S", src, "-B", build, "-DCMAKE_INSTALL_PREFIX=" + prefix],
                ["cmake", "--build", build], ["cmake", "--install", build]):
        r = bt.run(cmd, env=kit.pkg_env, timeout=300)
        if r.returncode != 0:
            bt.check(False, "%s %s: exit %d: %s" % (kit.variant, " ".join(cmd[:2]), r.returncode,
                                                    (r.stdout + r.stderr).strip()[-400:]))
            return None
    program = os.path.join(prefix, "bin", "your-service")
    bt.check(os.access(program, os.X_OK), "%s kit: cmake configures, builds and installs %s"
             % (kit.variant, os.path.relpath(program, work)))
    return program


class Installed:
    """The kit with the CMake-installed program as its service (up.Service runs kit.service)."""

    def __init__(self, kit, program):
        self.service = program
        self.kit = kit


def plain_env(**more):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH" and not k.startswith("BILLING_STAT")}
    env.update(more)
    return env


def counted(variant, kit, program, work):
    """The installed program under load, counted against its books."""
    what = "%s kit, the CMake-installed program" % variant
    books_dir = os.path.join(work, "books")
    stats_dir = os.path.join(work, "stats")
    os.makedirs(books_dir)
    os.makedirs(stats_dir, mode=0o700)
    if variant == "plain":
        why = bt.why_no_tracing(tracer=None)
        if why:
            print("%s: not counted through USDT here: %s" % (what, why))
            return
        args = ["--binary", program]
        env = plain_env()
    else:
        args = ["--stats-dir", stats_dir]
        env = plain_env(BILLING_STATS_DIR=stats_dir)
    svc = up.Service(Installed(kit, program), books_dir, env=env)
    ex = None
    try:
        r = bt.run(["grep", "-h", "libbillingprobes", "/proc/%d/maps" % svc.parent])
        mapped = {l.split()[-1] for l in r.stdout.splitlines()}
        bt.check(mapped and all(os.path.realpath(m) == kit.lib for m in mapped),
                 "%s: starts and maps the kit's %s (%s)" % (what, kit.soname, sorted(mapped)))
        ex = up.start_exporter(kit, "%s: billing-exporter %s" % (what, " ".join(args)), args)
        if ex:
            svc.batch()
            svc.batch()
            up.compare_metrics(ex.samples(), up.expected_metrics(svc.books()),
                               "%s, billing-exporter %s" % (what, args[0]))
        rc = svc.stop()
        bt.check(rc == 0, "%s: ends cleanly (exit %s)" % (what, rc))
    finally:
        svc.stop()
        if ex:
            ex.stop()


def check_kit(variant, kit):
    block = page_block()
    if block is None:
        return
    block = for_module(block, kit)
    work = tempfile.mkdtemp(prefix="userpath-cmake-")
    try:
        bare = cmake_install(kit, RPATH_LINE.sub("", block), os.path.join(work, "without"))
        if bare:
            r = subprocess.run([bare], capture_output=True, text=True, env=plain_env(), timeout=60,
                               stdin=subprocess.DEVNULL)
            bt.check(r.returncode != 0 and kit.soname in r.stderr,
                     "%s kit: installed without INSTALL_RPATH, the program does not start (exit %d: %s)"
                     % (variant, r.returncode, r.stderr.strip()[-200:]))
        program = cmake_install(kit, block, os.path.join(work, "as-written"))
        if not program:
            return
        r = bt.run([kit.tool, "list", program, "--json", "-P", "billing"], env=plain_env(), timeout=120)
        names = set(re.findall(r'"name": "(\w+)"', r.stdout))
        want = {bt.elf_name(p.name) for p in up.PROVIDER.probes}
        bt.check(r.returncode == 0 and names == want,
                 "%s kit: billing-probes list of the installed program: every probe of billing.d, the library's "
                 "too (%d of %d; %s)" % (variant, len(names & want), len(want), r.stderr.strip()[-200:]))
        counted(variant, kit, program, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


up.check_each_kit(check_kit)

#!/usr/bin/env python3
"""The build as a user meets it: without probes, and installed.

Usage: test_build_configurations.py SOURCE_ROOT WORK_DIR

1. -Dprobes=disabled: everything builds, its unit tests pass, and no ELF
   file it produced has a .note.stapsdt section.
2. Installed with probes (the userpath suite's plain kit when UP_WORK
   names its folder: the same `meson setup --prefix`, build and `meson
   install`, made once for both suites; else a build of its own):
   headers, libraries, pkg-config file, billing.d and the scripts are
   where ARCHITECTURE.md says; an out-of-tree program
   (examples/minimal) builds as C and C++ with
   `cc app.c $(pkg-config --cflags --libs billing-probes)`, runs, and
   carries its probe (the helpers' probes are in the installed library).
3. A downstream project (tests/install/downstream, copied out of tree)
   builds examples/minimal and a service carrying a subset of the probes
   against the installed copy, and its own `meson test` runs the installed
   `billing-probes check` (found through the pkg-config variable
   billing_probes) with the probes each binary promises: it passes, and
   fails when an expected probe is removed or its arguments change.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "userpath"))
import userpathtest as up  # noqa: E402  (the installed kit, built once per source state)

check = bt.check


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        print(f"$ {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def elf_files(root):
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    yield path


def setup(source, build, *options):
    shutil.rmtree(build, ignore_errors=True)
    r = run(["meson", "setup", build, source, "-Dexamples=disabled", *options])
    return r.returncode == 0 and run(["ninja", "-C", build]).returncode == 0


def disabled_build(source, work):
    build = os.path.join(work, "build-disabled")
    # the unit suite too: -Dtests (meson before 1.7 leaves it out by default),
    # its programs built ahead for --no-rebuild
    ok = setup(source, build, "-Dprobes=disabled", "-Dtests=enabled") and \
        run(["ninja", "-C", build, "meson-test-prereq"]).returncode == 0
    check(ok, "-Dprobes=disabled configures and builds")
    if not ok:
        return
    r = run(["meson", "test", "-C", build, "--suite", "unit", "--no-rebuild"])
    check(r.returncode == 0, "-Dprobes=disabled: unit tests pass")
    with_notes = [f for f in elf_files(build)
                  if ".note.stapsdt" in run(["readelf", "-SW", f]).stdout]
    elves = list(elf_files(build))
    check(len(elves) > 5 and not with_notes,
          f"-Dprobes=disabled: none of {len(elves)} ELF files has .note.stapsdt {with_notes[:3]}")


def installed_build(source, work):
    """The installed copy's checks, on the userpath suite's plain kit while
    this test holds its turn (the programs below load its library, which a
    userpath test's exporter counts), or on an install of its own."""
    if not up.WORK:
        build = os.path.join(work, "build-install")
        prefix = os.path.join(work, "prefix")
        shutil.rmtree(prefix, ignore_errors=True)
        ok = setup(source, build, f"--prefix={prefix}", "-Dprobes=enabled")
        check(ok, "-Dprobes=enabled configures and builds")
        if not ok or run(["meson", "install", "-C", build, "--no-rebuild"]).returncode != 0:
            check(False, "meson install")
            return
        installed_checks(source, work, build, prefix)
        return
    try:
        kit = up.kits()["plain"]
    except RuntimeError as e:
        check(False, "-Dprobes=enabled configures, builds and installs (the userpath kit): %s" % str(e)[-2000:])
        return
    check(True, "-Dprobes=enabled configures, builds and installs (the userpath kit, %s)" % kit.prefix)
    with kit.turn():
        installed_checks(source, work, kit.build, kit.prefix)


def installed_checks(source, work, build, prefix):
    for rel in ["include/billing/probes.h", "include/billing/timing.h", "include/billing/catalogue.h",
                "include/billing/probes_sdt.h", "include/billing/probes_off.h",
                "include/billing/probe_macros.h", "include/billing/probes_config.h",
                "share/billing-probes/billing.d",
                "share/billing-probes/iso4217.txt"]:
        check(os.path.isfile(os.path.join(prefix, rel)), f"installed {rel}")
    if glob.glob(os.path.join(source, "d-scripts", "*.d")):
        check(bool(glob.glob(os.path.join(prefix, "share/billing-probes/d-scripts/*.d"))) and
              bool(glob.glob(os.path.join(prefix, "share/billing-probes/d-scripts/bpftrace/*.bt"))),
              "installed D and bpftrace scripts in share/billing-probes/d-scripts")
        # the installed transform reads the installed billing.d with the
        # installed billing_d.py
        d_dir = os.path.join(prefix, "share/billing-probes/d-scripts")
        r = subprocess.run([sys.executable, os.path.join(d_dir, "function_sites.py"),
                            os.path.join(d_dir, "tps.d")], capture_output=True, text=True)
        check(r.returncode == 0 and "pid$target::billing_fire_" in r.stdout,
              "installed function_sites.py rewrites an installed script (%s)" % r.stderr.strip())
    pcs = glob.glob(os.path.join(prefix, "**", "pkgconfig", "billing-probes.pc"), recursive=True)
    check(len(pcs) == 1, "installed pkgconfig/billing-probes.pc")
    if not pcs:
        return
    libdir = os.path.dirname(os.path.dirname(pcs[0]))
    for lib in ["libbillingprobes.so", "libbillingprobes.a"]:
        check(os.path.exists(os.path.join(libdir, lib)), f"installed {lib}")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
    flags = run(["pkg-config", "--cflags", "--libs", "billing-probes"], env=env).stdout.split()
    minimal = os.path.join(source, "examples", "minimal", "minimal.c")
    for lang, compiler, std, src in (("C", "cc", "-std=c99", minimal), ("C++", "c++", "-std=c++17", None)):
        if src is None:
            src = os.path.join(work, "minimal.cpp")
            shutil.copy(minimal, src)
        exe = os.path.join(work, f"minimal-{lang}")
        r = run([compiler, std, "-Wall", "-Wextra", "-Werror", "-pedantic", src, "-o", exe, *flags,
                 f"-Wl,-rpath,{libdir}"])
        check(r.returncode == 0, f"{lang}: out-of-tree build with pkg-config --cflags --libs billing-probes")
        if r.returncode != 0:
            continue
        out = run([exe]).stdout
        check("payment 1001: approved" in out, f"{lang}: the out-of-tree program runs")
        notes = run(["readelf", "-n", exe]).stdout
        check("Name: payment__auth" in notes and "Name: request__start" not in notes,
              f"{lang}: the program carries its own probe; the helpers' stay in the library")
    lib_notes = run(["readelf", "-n", os.path.join(libdir, "libbillingprobes.so")]).stdout
    check("Name: request__start" in lib_notes, "the installed library carries the helpers' probes")
    installed_trace(prefix, libdir, os.path.join(work, "minimal-C"), source, build)
    downstream_project(source, work, prefix, env)


def installed_trace(prefix, libdir, program, source, build):
    """The installed tool finds a script by its bare name in the installed
    share folder (no BILLING_PROBES_SCRIPTS, which names a build tree's),
    resolves it for the program and the library it loads, and carries no
    path of the machine that built it (its data, not its debug info)."""
    tool = os.path.join(prefix, "bin", "billing-probes")
    if not os.path.exists(program):
        check(False, "installed trace: the out-of-tree program was built")
        return
    data = subprocess.run(["readelf", "-p", ".rodata", "-p", ".data", tool], capture_output=True).stdout
    data = data.replace(os.path.realpath(prefix).encode(), b"PREFIX")  # the install's own place may sit anywhere
    baked = [p for p in (os.path.realpath(source), os.path.realpath(build)) if p.encode() in data]
    check(not baked, "the installed tool carries no build-machine path in its data (%s)" % baked)
    env = {k: v for k, v in os.environ.items() if k != "BILLING_PROBES_SCRIPTS"}
    r = run([tool, "trace", "tps", "-c", program, "--dry-run"], cwd="/", env=env)
    # The script names its probes for bpftrace -p (one module each: no
    # path, which bpftrace 0.27 would attach twice); trace keeps a clause
    # only for a probe it found in the process, here in the installed
    # library the program loads (the program carries none of tps's).
    check(r.returncode == 0 and "tps.bt - transactions completed per second" in r.stdout and
          re.search(r"^usdt::billing:transaction__done /\(pid == \d+", r.stdout, re.M),
          "installed `billing-probes trace tps -c PROGRAM --dry-run`: the installed script, its "
          "transaction-done clause kept for the process (the probe found in the installed library)")
    if r.returncode != 0 or "usdt::billing:transaction__done" not in r.stdout:
        print(r.stdout[-600:] + r.stderr)


def downstream_project(source, work, prefix, env):
    """A service's own meson project runs the installed check as a test."""
    tool = run(["pkg-config", "--variable=billing_probes", "billing-probes"], env=env).stdout.strip()
    check(tool == os.path.join(prefix, "bin", "billing-probes") and os.access(tool, os.X_OK),
          f"pkg-config --variable=billing_probes names the installed tool ({tool})")
    project = os.path.join(work, "downstream")
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(os.path.join(source, "tests", "install", "downstream"), project)
    shutil.copy(os.path.join(source, "examples", "minimal", "minimal.c"), project)
    for name in ("subset_program.c", "program_start.h"):
        shutil.copy(os.path.join(source, "tests", "tool", name), project)
    build = os.path.join(work, "downstream-build")
    shutil.rmtree(build, ignore_errors=True)
    r = run(["meson", "setup", build, project], env=env)
    check(r.returncode == 0, "downstream project configures against the installed copy")
    if r.returncode != 0:
        return
    for variant, ok, why in (("ok", True, ""),
                             ("without-refund", False, "missing: billing:refund__process"),
                             ("refund-old-args", False, "mismatch: billing:refund__process")):
        run(["meson", "configure", build, f"-Dvariant={variant}"], env=env)
        r = run(["meson", "test", "-C", build, "--print-errorlogs"], env=env)
        log = r.stdout + r.stderr
        tests_ran = "probes-minimal" in log and "probes-service" in log
        if ok:
            check(r.returncode == 0 and tests_ran,
                  f"downstream meson test ({variant}): check with expectations passes for minimal and the service")
        else:
            check(r.returncode != 0 and why in log and "probes-minimal" in log,
                  f"downstream meson test ({variant}): the service's check fails saying {why!r}")


def main():
    source, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    disabled_build(source, work)
    installed_build(source, work)
    bt.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The README's build line, as written, makes a program that starts: the
kit of this build is installed (`meson install --destdir`, the library,
headers and .pc), its .pc given the directory it was copied to as prefix
(what `--prefix` there would have written), and README.md's `cc app.c
$(pkg-config ...) ... -o app` line is run by bash on examples/minimal
with PKG_CONFIG_PATH naming the copy's LIBDIR/pkgconfig, as
docs/building.md says.  The program must run (exit 0, its payment line)
and load libbillingprobes.so.0 from the installed copy, not from the
build tree.

usage: test_installed_build.py SOURCE_ROOT BUILD_ROOT MESON"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

source, build, meson = sys.argv[1:4]
bt.require_program("pkg-config", "pkg-config")
cc_lines = re.findall(r"^(cc app\.c .*-o app)\s*$", open(os.path.join(source, "README.md")).read(), re.M)
bt.check(len(cc_lines) == 1, "README.md has one build line: %s" % cc_lines)

work = tempfile.mkdtemp(prefix="billing-installed-")
try:
    r = bt.run([meson, "install", "-C", build, "--no-rebuild", "--destdir", work, "--tags", "devel,runtime"],
               timeout=300)
    bt.check(r.returncode == 0, "meson install --destdir: %s" % (r.stdout + r.stderr).strip()[-300:])
    pcs = glob.glob(os.path.join(work, "**", "pkgconfig", "billing-probes.pc"), recursive=True)
    if not bt.check(len(pcs) == 1, "one billing-probes.pc installed: %s" % pcs):
        bt.finish()
    pc = open(pcs[0]).read()
    prefix = re.search(r"^prefix=(.*)$", pc, re.M).group(1)
    with open(pcs[0], "w") as f:
        f.write(pc.replace("prefix=" + prefix, "prefix=" + work + prefix, 1))
    # The loader must find the library on its own: meson test may point
    # LD_LIBRARY_PATH at the build tree.
    plain = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env = dict(plain, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
    libdir = subprocess.run(["pkg-config", "--variable=libdir", "billing-probes"], env=env,
                            capture_output=True, text=True).stdout.strip()
    bt.check(libdir == os.path.dirname(os.path.dirname(pcs[0])),
             "pkg-config --variable=libdir names the installed LIBDIR (%s)" % os.path.relpath(libdir, work))

    shutil.copy(os.path.join(source, "examples", "minimal", "minimal.c"), os.path.join(work, "app.c"))
    r = subprocess.run(["bash", "-c", cc_lines[0]], cwd=work, env=env, capture_output=True, text=True)
    if bt.check(r.returncode == 0, "the README's line builds examples/minimal: %s" % r.stderr.strip()[-300:]):
        r = subprocess.run([os.path.join(work, "app")], capture_output=True, text=True, env=plain)
        bt.check(r.returncode == 0 and "payment 1001: approved" in r.stdout,
                 "the program starts and runs (exit %d): %s" % (r.returncode, (r.stdout + r.stderr).strip()))
        ldd = subprocess.run(["ldd", os.path.join(work, "app")], capture_output=True, text=True, env=plain).stdout
        loaded = re.search(r"libbillingprobes\.so\.0 => (\S+)", ldd)
        bt.check(loaded is not None and loaded.group(1).startswith(libdir + os.sep),
                 "it loads libbillingprobes.so.0 from the installed LIBDIR: %s"
                 % (loaded.group(1) if loaded else "not at all"))
finally:
    shutil.rmtree(work, ignore_errors=True)
bt.finish()

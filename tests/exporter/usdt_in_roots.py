#!/usr/bin/env python3
"""The exporter's USDT mode on each distribution's libbpf: the kit built
inside each root (a chroot, in a mount namespace of its own, so nothing
stays mounted) and the exporter's USDT tests run there.  Prints a Markdown
table: per root, the libbpf the exporter runs with and each test's result.

  usdt_in_roots.py [--source DIR] [--tests T,...] [ROOT...]

ROOT: a debootstrap root with the kit's build dependencies; default
/var/cache/billing-probes/roots/trixie and .../sid.  The source tree is
bound at its own path inside each root and built in build-NAME there
(NAME: the root's directory name; kept between runs, so a second run only
rebuilds what changed).  The root is bound onto itself first: a chroot that
is no mount point has no line in /proc/self/mountinfo for its own files,
and --binary reads a file's device from that line.  Needs root; exit 77
with the reason when it is not, or no root exists; exit 1 when a test
fails (or does not run) in some root.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOTS = ["/var/cache/billing-probes/roots/trixie", "/var/cache/billing-probes/roots/sid"]
TESTS = ["exporter-usdt-args", "exporter-arg-forms", "exporter-threads", "exporter-two-modules",
         "exporter-semaphores", "exporter-many-sites", "exporter-hostile-labels", "exporter-binary-service",
         "exporter-binary-mode"]

# Run inside the new mount namespace: $1 root, $2 source, $3 build dir, the rest the tests.
INSIDE = r'''
set -e
root=$1 src=$2 build=$3; shift 3
mount --bind "$root" "$root"
for d in /proc /sys /dev; do mount --rbind "$d" "$root$d"; done
mkdir -p "$root$src" && mount --bind "$src" "$root$src"
exec chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 sh -c '
cd "$1" && b=$2 && shift 2
{ [ -f "$b/build.ninja" ] || meson setup "$b" -Dprobes=enabled -Dtool=enabled -Dexamples=enabled \
  -Dexporter=enabled; } >"/tmp/$b.log" 2>&1 && ninja -C "$b" >>"/tmp/$b.log" 2>&1 ||
  { echo "build failed: see /tmp/$b.log in the root"; exit 3; }
echo "libbpf: $(readlink -f "$(ldd "$b/tools/billing-exporter/billing-exporter" | sed -n "s/.*libbpf[^ ]* => \([^ ]*\).*/\1/p")")"
meson test -C "$b" --print-errorlogs "$@"' _ "$src" "$build" "$@"
'''


def run_root(root, source, tests):
    """(libbpf, {test: result}, output) of the tests in root."""
    build = "build-" + os.path.basename(root.rstrip("/"))
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", INSIDE, "_", root, source,
                        build, *tests], capture_output=True, text=True, errors="replace")
    out = p.stdout + p.stderr
    m = re.search(r"^libbpf: (\S+)", out, re.M)
    libbpf = os.path.basename(m.group(1)) if m else "?"
    results = dict(re.findall(r"(exporter-[\w-]+)\s+(OK|FAIL|SKIP|TIMEOUT|ERROR|UNEXPECTEDPASS|EXPECTEDFAIL)\b",
                              out))
    return libbpf, results, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=os.path.normpath(os.path.join(HERE, "..", "..")))
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("roots", nargs="*", default=ROOTS)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("skipped: needs root (chroot, mounts, BPF)")
        sys.exit(77)
    roots = [r for r in args.roots if os.path.isdir(os.path.join(r, "usr"))]
    if not roots:
        print("skipped: no root among %s (tests/distros builds them)" % " ".join(args.roots))
        sys.exit(77)
    tests = args.tests.split(",")
    failed = False
    print("| root | libbpf | test | result |\n|---|---|---|---|")
    for root in roots:
        libbpf, results, out = run_root(root, os.path.abspath(args.source), tests)
        for t in tests:
            result = results.get(t, "did not run")
            failed |= result not in ("OK", "SKIP")
            print("| %s | %s | %s | %s |" % (os.path.basename(root), libbpf, t, result), flush=True)
        if any(results.get(t) not in ("OK", "SKIP") for t in tests):
            sys.stderr.write("--- %s\n%s\n" % (root, out[-6000:]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

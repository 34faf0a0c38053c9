"""The Debian bookworm root containers-podman runs billingd from
(containertest.rootfs(): debootstrap, made once per build folder), made
here beside other tests, first among them: debootstrap waits mostly on
the mirror and the disk, and containers-podman, started later, finds it
made (or waits for it on the cache's lock).

Checks that it is a Debian 12 root with a shell.  Needs root and debootstrap (tests/install-deps.sh)."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import containertest as ct  # noqa: E402
from containertest import bt, check, finish  # noqa: E402

bt.require_root("debootstrap")
if not shutil.which("debootstrap") and not os.path.exists("/usr/sbin/debootstrap"):
    bt.skip("debootstrap is not installed (apt-get install debootstrap; tests/install-deps.sh does)")
CACHE = os.environ.get("BP_CONTAINER_CACHE", "")
if not CACHE:
    bt.skip("BP_CONTAINER_CACHE is not set: run through meson test")

root = ct.rootfs(CACHE)
version = open(os.path.join(root, "etc", "debian_version")).read().strip()
check(version.startswith("12."), "the container root is Debian 12 (debian_version %s)" % version)
check(os.path.lexists(os.path.join(root, "bin", "sh")), "the container root has /bin/sh")
finish()

#!/usr/bin/env python3
"""--binary PROGRAM counts the service: the probes of the program and of
the libraries it loads, in the processes running it, and nobody else's.

exporter_prefork is a pre-fork service built the README's way: its
request-start/done fire in libbillingprobes.so (the timing helpers), its
invoice-create in itself.  exporter_prefork_other is another program built
from the same source, mapping the same library file.

  --binary PREFORK, started before either runs: PREFORK's workers, forked
      once the exporter serves and firing from their first instruction,
      count exactly, requests and invoices; OTHER's workers fire as many
      requests through the same library at the same time, and none counts
      (and again through a uprobe per site: BILLING_EXPORTER_UPROBES=per-site)
  --binary PREFORK --binary OTHER: each program's fires counted once
  --binary PREFORK --binary LIB: refused in one line, exit 2 (the library's
      fires in PREFORK's processes would count twice)
  --binary OVERLAY/PREFORK, a copy on an overlayfs whose layers are two file
      systems, where stat() shows a layer's device and the kernel's inode
      the overlay's: counted exactly (the BPF filter's key is the kernel's)
  another user runs the service's program with his own copy of the library
      (LD_LIBRARY_PATH): his file is refused in one line, none of the
      requests fired through it counts

On the code before: 0 requests for PREFORK (only the program file was
attached); with --binary LIB added, OTHER's requests counted as PREFORK's;
--binary PREFORK --binary LIB ran; a key from stat() counted 0 requests
on the overlay; a library taken from any process's maps counted the other
user's requests.  The programs and the library are the test's own copies
(exportertest.private_programs): --binary attaches to files no other
test's process maps.  Needs root (BPF, uprobes, mounts, another user)."""
import atexit
import os
import shutil
import subprocess
import tempfile

import exportertest as h
from exportertest import bt

h.require_exporter_can_run()
exe = h.env_path("BX_EXPORTER")
own = tempfile.mkdtemp(prefix="bx-binary-service-")
atexit.register(shutil.rmtree, own, ignore_errors=True)
(prefork, other), library = h.private_programs(own, h.env_path("BX_PREFORK"), h.env_path("BX_PREFORK_OTHER"))
WORKERS, THREADS, N = 3, 2, 2000
FIRED = WORKERS * THREADS * N


class Service:
    """A prefork_program waiting for its go."""

    def __init__(self, program, prefix=(), env=None):
        self.proc = subprocess.Popen([*prefix, program, str(WORKERS), str(THREADS), str(N)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline().split()
        if line[:2] != ["ready", "pid"]:
            raise RuntimeError("%s: %r" % (program, line))

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def fired(self):
        """{"requests": R, "invoices": I} once every worker is gone."""
        words = self.proc.stdout.readline().split()
        if words[:1] != ["fired"]:
            raise RuntimeError("prefork_program: %r" % words)
        return {k: int(v) for k, v in (w.split("=") for w in words[1:])}

    def stop(self):
        bt.kill_all(self.proc)


def run(*targets, service=prefork, env=None, links=None):
    """The service's and the other program's workers fire at once under an
    exporter started with targets before either: (samples, fired per
    program).  links: what each of the exporter's links must be."""
    ex = h.Exporter(exe, *targets, env=env)
    services = []
    try:
        if links:
            got = h.fd_info(ex.proc.pid, "link_type")
            bt.check(got and set(got) == {links}, "%s: every link of the exporter is %s (%s)"
                     % (" ".join(targets), links, got))
        services = [Service(service), Service(other)]
        for s in services:
            s.go()
        fired = [s.fired() for s in services]
        return ex.samples(), fired
    finally:
        for s in services:
            s.stop()
        ex.stop()


def counts(samples):
    return h.total(samples, "billing_requests_total"), h.total(samples, "billing_invoices_total")


s, fired = run("--binary", prefork)
bt.check(fired == [{"requests": FIRED, "invoices": FIRED}] * 2, "both programs fired %d requests (%s)"
         % (FIRED, fired))
bt.check(counts(s) == (FIRED, FIRED),
         "--binary PREFORK: its forked workers' requests (in libbillingprobes.so) and invoices counted exactly "
         "from their first fire, the other program's requests through the same library not at all "
         "(requests, invoices: %s, want %s)" % (counts(s), (FIRED, FIRED)))
bt.check(h.total(s, "billing_exporter_target_up", target="binary:" + prefork) == 1, "binary target up")

# The same through a uprobe per site (what a kernel without multi-uprobe links
# gets): the program's cookie rides in each site's link too.
s, fired = run("--binary", prefork, env={"BILLING_EXPORTER_UPROBES": "per-site"}, links="perf")
bt.check(counts(s) == (FIRED, FIRED), "--binary PREFORK, a uprobe per site: requests and invoices exact, the other "
         "program's not counted (%s, want %s)" % (counts(s), (FIRED, FIRED)))

s, fired = run("--binary", prefork, "--binary", other)
bt.check(counts(s) == (2 * FIRED, 2 * FIRED),
         "--binary PREFORK --binary OTHER: each program's requests and invoices counted once (%s, want %s)"
         % (counts(s), (2 * FIRED, 2 * FIRED)))

r = bt.run([exe, "--binary", prefork, "--binary", library, "--once", "--interval", "1"], timeout=60)
lines = r.stderr.strip().splitlines()
bt.check(r.returncode == 2 and len(lines) == 1 and "is a library --binary %s loads" % prefork in lines[0],
         "--binary PREFORK --binary LIB: refused in one line, exit 2 (rc %d, %r)" % (r.returncode, lines))


def mount_device(path):
    """MAJOR:MINOR of the mount at path, as /proc/self/mountinfo names it."""
    with open("/proc/self/mountinfo") as f:
        return [l.split()[2] for l in f if l.split()[4] == path][-1]


# The copy at OVERLAY/t/e/prefork finds the library as the original does
# (RUNPATH $ORIGIN/../../lib): OVERLAY/lib is a link to the library's folder.
top = tempfile.mkdtemp(prefix="bx-binary-overlay-")
lower, upper, work, merged = (os.path.join(top, d) for d in ("lower", "upper", "work", "merged"))
mounted = []


def mount(*args):
    r = bt.run(["mount", *args])
    if r.returncode != 0:
        raise RuntimeError("mount %s: %s" % (" ".join(args), r.stderr))
    mounted.insert(0, args[-1])


try:
    for d in (lower, upper, work, merged):
        os.mkdir(d)
    mount("-t", "tmpfs", "tmpfs", lower)
    os.makedirs(os.path.join(lower, "t", "e"))
    shutil.copy(prefork, os.path.join(lower, "t", "e", "prefork"))
    os.symlink(os.path.dirname(os.path.realpath(library)), os.path.join(lower, "lib"))
    mount("-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s" % (lower, upper, work), merged)
    copy = os.path.join(merged, "t", "e", "prefork")
    st = os.stat(copy)
    seen = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    bt.check(seen != mount_device(merged), "the copy on the overlay: stat() shows device %s, the kernel's inode "
             "has the overlay's %s (the case that needs the kernel's)" % (seen, mount_device(merged)))
    s, fired = run("--binary", copy, service=copy)
    bt.check(counts(s) == (FIRED, FIRED), "--binary OVERLAY/PREFORK: requests and invoices exact (%s, want %s)"
             % (counts(s), (FIRED, FIRED)))
finally:
    for where in mounted:  # lazily: a process of a failed run may still hold a file there
        bt.run(["umount", "--lazy", where])
    shutil.rmtree(top, ignore_errors=True)

# The service at TOP/t/e/service (root's, as installed), finding the library
# through TOP/lib; another user runs it with his own copy of the library.
uid, gid, as_attacker = bt.attacker()
top = tempfile.mkdtemp(prefix="bx-binary-user-")
ex = his = None
try:
    os.chmod(top, 0o755)
    os.makedirs(os.path.join(top, "t", "e"))
    service = os.path.join(top, "t", "e", "service")
    shutil.copy(prefork, service)
    os.symlink(os.path.dirname(os.path.realpath(library)), os.path.join(top, "lib"))
    own_lib = os.path.join(top, "his")
    os.mkdir(own_lib)
    shutil.copy(os.path.realpath(library), os.path.join(own_lib, "libbillingprobes.so.0"))
    for path in (own_lib, os.path.join(own_lib, "libbillingprobes.so.0")):
        os.chown(path, uid, gid)
    ex = h.Exporter(exe, "--binary", service)
    his = Service(service, prefix=as_attacker, env=dict(os.environ, LD_LIBRARY_PATH=own_lib))
    his_file = os.path.join(own_lib, "libbillingprobes.so.0")
    refused = "%s, a library a process running it maps, is owned by uid %d" % (his_file, uid)
    bt.wait_for("the exporter to look at the other user's process (refusing or attaching his file)",
                lambda: refused in ex.output() or "attached to " + his_file in ex.output(), timeout=30)
    his.go()
    fired = his.fired()
    s = ex.samples()
    said = [line for line in ex.output().splitlines() if his_file in line]
    bt.check(len(said) == 1 and refused in said[0] and fired["requests"] == FIRED
             and h.total(s, "billing_requests_total") == 0,
             "another user's copy of the library (LD_LIBRARY_PATH) refused in one line, none of the %d requests "
             "fired through it counted (%s; %r)" % (FIRED, h.total(s, "billing_requests_total"), said))
finally:
    if his:
        his.stop()
    if ex:
        ex.stop()
    shutil.rmtree(top, ignore_errors=True)
bt.finish()

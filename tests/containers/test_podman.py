"""billingd in a real container runtime, traced and exported from the host.

podman (runtime runc, cgroupfs: crun refuses these machines' hybrid
cgroups) runs billingd from a Debian bookworm root made by `debootstrap
--variant=minbase` from the mirror apt uses (containertest.rootfs(),
made once in the build folder, BP_CONTAINER_CACHE, by containers-root
beside other tests), with billingd installed
at /app inside, the build's libbillingprobes.so.0 in the root's libdir (as
an installed kit puts it; billingd links the shared library as a user's
service does) and its database on a volume.  The host has neither file.

- `billing-probes list HOSTPID` shows its probes at /app/billingd;
- `billing-probes trace biz_metrics -p HOSTPID` counts a load's invoices
  and payments exactly (the books in its database are the ground truth);
- `billing-exporter --binary /app/billingd` (the path as the container
  sees it; it counts the probes of the libraries billingd's processes map
  too: the timing helpers' probes, such as request-done, are in the
  container's libbillingprobes.so.0), started once the first container
  runs, counts that container and the same container restarted, without
  being restarted itself: its totals equal the two databases' rows and
  billing-load's responses.

Needs root, podman, runc and debootstrap (tests/install-deps.sh), bpftrace
and the exporter."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "exporter"))
sys.path.insert(0, os.path.join(HERE, "..", "billingd"))
import containertest as ct  # noqa: E402
from containertest import bt, check, finish, run_tool  # noqa: E402

bt.require_root("podman, bpftrace and the exporter")
bt.require_tracing()
for prog, pkg in (("podman", "podman"), ("runc", "runc"), ("debootstrap", "debootstrap")):
    if not shutil.which(prog) and not os.path.exists("/usr/sbin/" + prog):
        bt.skip("%s is not installed (apt-get install %s; tests/install-deps.sh does)" % (prog, pkg))
BILLINGD = os.environ.get("BP_BILLINGD", "")
LOAD = os.environ.get("BP_BILLING_LOAD", "")
CACHE = os.environ.get("BP_CONTAINER_CACHE", "")
if not (BILLINGD and LOAD and CACHE and ct.EXPORTER and ct.TOOL):
    bt.skip("BP_BILLINGD, BP_BILLING_LOAD, BP_CONTAINER_CACHE, BX_EXPORTER, BP_TOOL: run through meson test "
            "with -Dexamples=enabled -Dexporter=enabled")
import exportertest as h  # noqa: E402  (tests/exporter)
from billingdtest import run_load  # noqa: E402  (tests/billingd)

INSIDE = "/app/billingd"
LIBRARY = "libbillingprobes.so.0"


def fresh_copy(src, dest):
    """src at dest, replaced whole (a file from this build, new each run)."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy(os.path.realpath(src), dest + ".new")
    os.rename(dest + ".new", dest)


def install(root):
    """billingd at /app/billingd and libbillingprobes.so.0 in the libdir of
    libc (the installed kit's multiarch libdir, where the loader looks),
    both fresh each run; every other library ldd names at the same path
    (the root is the same Debian release).  The library's path inside."""
    fresh_copy(BILLINGD, root + INSIDE)
    libs = dict(re.findall(r"^\s*(\S+) => (/\S+) \(0x", bt.run(["ldd", BILLINGD]).stdout, flags=re.M))
    libdir = os.path.dirname(libs["libc.so.6"])
    inside = os.path.join(libdir, LIBRARY)
    fresh_copy(libs[LIBRARY], root + inside)
    for name, lib in libs.items():
        dest = root + lib
        if name != LIBRARY and not os.path.exists(dest):
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy(os.path.realpath(lib), dest)
    return inside


class Container:
    """billingd in podman, its database in a host folder mounted at /data."""
    count = 0

    def __init__(self, root):
        Container.count += 1
        self.data = tempfile.mkdtemp(prefix="bp-podman-data-")
        self.name = "bp-test-%d-%d" % (os.getpid(), Container.count)
        argv = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs", "run", "--rm", "--name", self.name,
                "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                "-v", "%s:/data" % self.data, "--rootfs", root,
                INSIDE, "--port", "0", "--db", "/data/billing.db", "--threads", "2", "--gateway-latency-ms", "0"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     stdin=subprocess.DEVNULL)
        self.out = ct.Lines(self.proc.stdout)
        line = self.out.wait_for(lambda l: "listening on http://" in l, "billingd in the container to listen")
        self.url = re.search(r"(http://127\.0\.0\.1:\d+)/", line).group(1)
        want = os.stat(root + INSIDE)

        def host_pid():
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                try:
                    st = os.stat("/proc/%s/root%s" % (name, INSIDE))
                    exe = os.readlink("/proc/%s/exe" % name)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino) and exe == INSIDE \
                        and ct.ns_pids(int(name))[-1:] == [1]:
                    return int(name)
            return None
        self.pid = ct.wait_until(host_pid, "the container's billingd among the host's processes")

    def load(self, seed):
        rc, summary, err = run_load(LOAD, self.url, "--duration", "2", "--concurrency", "4", "--seed", seed,
                                    timeout=600)
        check(rc == 0 and summary and summary["invoices_created"] > 0,
              "billing-load against the container (seed %s): %s invoices (rc=%d %s)"
              % (seed, summary and summary["invoices_created"], rc, err[-200:]))
        return summary

    def stop(self):
        """SIGTERM to billingd (the container's PID 1 has a handler), then
        the podman client exits with it (--rm removes the container)."""
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, 15)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=ct.DEADLINE)
            except subprocess.TimeoutExpired:
                bt.run(["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs", "rm", "-f", self.name])
                self.proc.wait()

    def counts(self):
        import sqlite3
        conn = sqlite3.connect("file:%s/billing.db?mode=ro" % self.data, uri=True)
        try:
            q = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
            return {"invoices": q("SELECT count(*) FROM invoices"),
                    "approved": q("SELECT count(*) FROM payments WHERE status = 'approved'")}
        finally:
            conn.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.data, ignore_errors=True)


root = ct.rootfs(CACHE)
library = install(root)
for path in (INSIDE, library):
    check(not os.path.exists(path), "the host has no %s (precondition)" % path)

# --- list and trace from the host ---------------------------------------------------
c0 = Container(root)
try:
    rc, out, err = run_tool(["list", str(c0.pid), "-n", "payment__auth"])
    check(rc == 0 and out.splitlines()[1:] and out.splitlines()[1].split()[:2] == [INSIDE, "billing"],
          "list HOSTPID (podman): payment__auth in %s (rc=%d %r)" % (INSIDE, rc, (out + err)[-300:]))
    tracer = subprocess.Popen([ct.TOOL, "trace", "biz_metrics", "-p", str(c0.pid), "--", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = ct.Lines(tracer.stdout)
    lines.wait_for(lambda l: l.startswith("Tracing"), "trace biz_metrics -p to start")
    summary = c0.load("5")
    c0.stop()  # the container gone: trace ends by itself
    tracer.wait(timeout=ct.DEADLINE)
    text = "\n".join(lines.rest())
    tot = text.split("TOTAL since start", 1)[-1]
    inv = re.search(r"^invoices (\d+)$", tot, flags=re.M)
    pay = re.search(r"^payments approved (\d+)", tot, flags=re.M)
    books = c0.counts()
    check(tracer.returncode == 0 and inv and pay and int(inv.group(1)) == books["invoices"]
          and int(pay.group(1)) == books["approved"],
          "trace biz_metrics -p HOSTPID: invoices and approved payments equal the container's books "
          "(%s/%s vs %s; rc %d %r)" % (inv and inv.group(1), pay and pay.group(1), books, tracer.returncode,
                                       tracer.stderr.read()[-300:]))
finally:
    c0.cleanup()

# --- the exporter on the path the container sees, across a restart ---------------------
c1 = Container(root)
runs = []
exporter = None
try:
    exporter = h.Exporter(ct.EXPORTER, "--binary", INSIDE)
    runs.append((c1.load("3"), None))
    c1.stop()
    runs[-1] = (runs[-1][0], c1.counts())
    c2 = Container(root)  # the container restarted: same root, same file
    try:
        rc, out, err = run_tool(["list", str(c2.pid), "--json", "-n", "payment__auth"])
        traced = [p["traced"] for p in json.loads(out)["probes"]] if rc == 0 else None
        check(traced == [True], "the restarted container's semaphore is raised by the kernel at exec (%s)" % traced)
        runs.append((c2.load("4"), None))
        up = h.total(exporter.samples(), "billing_exporter_target_up", target="binary:" + INSIDE)
        check(up == 1, "billing_exporter_target_up is 1 while the container runs (%s)" % up)
        c2.stop()
        runs[-1] = (runs[-1][0], c2.counts())
    finally:
        c2.cleanup()
    s = exporter.samples()
    # no process runs it any more, and the host has no such file: down
    # once the exporter's next look through /proc (once a second)
    ct.wait_until(lambda: h.total(exporter.samples(), "billing_exporter_target_up", target="binary:" + INSIDE) == 0,
                  "billing_exporter_target_up to fall to 0 with no container running")
    check(True, "billing_exporter_target_up falls to 0 once no container runs %s" % INSIDE)
finally:
    rc, output = exporter.stop() if exporter else (None, "")
    c1.cleanup()

want = sum(r[1]["invoices"] for r in runs)
got = h.total(s, "billing_invoices_total")
check(got == want, "exporter --binary %s: invoices over the container and its restart == the books (%d == %d)"
      % (INSIDE, got, want))
want = sum(r[1]["approved"] for r in runs)
got = h.total(s, "billing_payments_total", outcome="approved")
check(got == want, "approved payments over both runs == the books (%d == %d)" % (got, want))
want = sum(r[0]["responses"] for r in runs)
got = h.total(s, "billing_requests_total")
check(got == want, "requests over both runs == billing-load's responses (%d == %d)" % (got, want))
check(rc == 0 and "attached to" not in output,
      "the exporter exits 0; the restart needed no new attachment (same file) (%s)" % rc)
finish()

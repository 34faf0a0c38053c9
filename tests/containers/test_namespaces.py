"""A service in its own PID and mount namespaces (unshare), seen from the
host: the program exists only at /srv/app-PID/renewald inside (PID this
test's own: containertest.NS_INSIDE; a tmpfs of the namespace; the host
has no such file).  From the host:

- list, check, doctor HOSTPID read it through /proc/PID/root;
- trace tps/biz_metrics -p HOSTPID... and trace tps --binary
  /srv/app-PID/renewald (the path inside) count it exactly (bpftrace attached
  through /proc/HOSTPID/root/srv/app-PID/renewald, the same inode);
- billing-exporter --pid HOSTPID counts it exactly;
- billing-exporter --binary /srv/app-PID/renewald (the path as the service
  sees it) counts it, then the same service restarted (a new namespace
  bind-mounting the same file), then one started from a fresh copy of the
  program (a new file: attached by the exporter's watcher), all without
  restarting the exporter: the totals add up exactly, nothing twice.

Needs root, unshare, bpftrace and the exporter (CI has them)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "exporter"))
import containertest as ct  # noqa: E402
from containertest import bt, check, finish, run_tool  # noqa: E402

bt.require_root("namespaces, bpftrace and the exporter")
bt.require_tracing()
bt.require_program("unshare", "util-linux")
if not ct.SERVICE or not ct.TOOL:
    bt.skip("BP_PREFORK_SERVICE/BP_TOOL not set: run through meson test")
if not os.path.exists("/srv") or not os.path.isdir("/srv"):
    bt.skip("no /srv directory to mount the service's tmpfs on")

ROUNDS = 4
INSIDE = ct.NS_INSIDE
hidden = tempfile.mkdtemp(prefix="bp-ns-")
program = os.path.join(hidden, "renewald")
shutil.copy(ct.SERVICE, program)


def ns_service(mode="bind", workers=2):
    return ct.ns_service(program, hidden, mode, workers)


check(not os.path.exists(INSIDE), "the host has no %s (precondition)" % INSIDE)
svc = ns_service()
try:
    pid = svc.parent
    check(os.path.exists("/proc/%d/root%s" % (pid, INSIDE)), "the service runs %s inside (host PID %d, workers %s)"
          % (INSIDE, pid, svc.workers))

    # --- list, check, doctor ---------------------------------------------------------
    rc, out, err = run_tool(["list", str(pid), "-P", "billing"])
    rows = [l.split() for l in out.splitlines()[1:]]
    check(rc == 0 and rows and all(r[0] == INSIDE for r in rows) and not err,
          "list HOSTPID: %d billing probes in %s (rc=%d %r)" % (len(rows), INSIDE, rc, err))
    rc, out, err = run_tool(["check", str(pid), "--expect", "invoice-create", "--expect", "transaction-done",
                             "--expect", "error"])
    check(rc == 0 and "ok:" in out, "check HOSTPID --expect ...: ok (rc=%d %r)" % (rc, (out + err)[-200:]))
    rc, out, err = run_tool(["doctor", str(pid)])
    check(re.search(r"^OK +probe sites: ", out, flags=re.M) and re.search(r"^OK +semaphores: ", out, flags=re.M)
          and "no such file" not in (out + err).lower(), "doctor HOSTPID reads its sites and semaphores")

    # --- trace -------------------------------------------------------------------------
    rc, out, err = run_tool(["trace", "tps", "-p", str(pid), "--dry-run"])
    check(rc == 0 and "usdt:/proc/%d/root%s:billing:transaction__done" % (pid, INSIDE) in out,
          "trace --dry-run attaches through /proc/%d/root%s (rc=%d %r)" % (pid, INSIDE, rc, err[-200:]))
    rc, out, err = run_tool(["trace", "tps", "--binary", INSIDE, "--dry-run"])
    specs = re.findall(r"^usdt:(\S+):billing:transaction__done", out, flags=re.M)
    check(rc == 0 and len(specs) == 1 and specs[0].startswith("/proc/") and specs[0].endswith("/root" + INSIDE)
          and "pid ==" not in out,
          "trace --binary %s (the path inside): the file found through a process's root, no pid predicate "
          "(rc=%d %s %r)" % (INSIDE, rc, specs, err[-200:]))
    for script, args, pids in (("tps", [], svc.host_pids()), ("biz_metrics", ["1"], [svc.workers[0]]),
                               ("tps", [], None)):
        targets = []
        for p in pids or []:
            targets += ["-p", str(p)]
        if pids is None:  # --binary: every process running the file
            targets, pids = ["--binary", INSIDE], svc.host_pids()
        tracer = subprocess.Popen([ct.TOOL, "trace", script] + targets + ["--"] + args,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = ct.Lines(tracer.stdout)
        lines.wait_for(lambda l: l.startswith("Tracing"), "%s to start" % script)
        svc.fire(svc.host_pids(), ROUNDS)  # every process fires; only pids count
        if script == "tps":
            # tps's END skips seconds a stalled timer has not printed yet:
            # wait until the printed seconds hold every transaction
            want_txns, got_txns = 2 * ROUNDS * len(pids), 0
            while got_txns < want_txns:
                line = lines.wait_for(lambda l: bt.tps_seconds(l), "tps lines up to %d" % want_txns)
                got_txns += bt.tps_seconds(line)[0][0]
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=ct.DEADLINE)
        text = "\n".join(lines.rest())
        err = tracer.stderr.read()
        if script == "tps":
            secs = bt.tps_seconds(text)
            got = (sum(s[0] for s in secs), sum(s[1] for s in secs))
            want = (2 * ROUNDS * len(pids), ROUNDS * len(pids))
        else:
            tot = text.split("TOTAL since start", 1)[-1]
            got = tuple(int(x) for x in re.findall(r"^(?:invoices|refunds) (\d+)$", tot, flags=re.M))
            want = (ROUNDS, ROUNDS)
        check(tracer.returncode == 0 and got == want,
              "trace %s %s (%d of the namespace's processes): exact (%s, want %s; rc %d %r)"
              % (script, targets[0], len(pids), got, want, tracer.returncode, err[-300:]))

    # --- exporter --pid ---------------------------------------------------------------
    import exportertest as h  # noqa: E402  (tests/exporter)
    if not ct.EXPORTER:
        bt.skip("BX_EXPORTER not set (build with -Dexporter=enabled)")
    ex = h.Exporter(ct.EXPORTER, "--pid", str(pid), "--metrics", "business")
    try:
        svc.fire(svc.host_pids(), ROUNDS)
        s = ex.samples()
    finally:
        rc, output = ex.stop()
    check(h.total(s, "billing_invoices_total") == ROUNDS and h.total(s, "billing_errors_total") == ROUNDS,
          "exporter --pid HOSTPID: the parent's %d rounds exactly (%s invoices, %s errors; rc %d)"
          % (ROUNDS, h.total(s, "billing_invoices_total"), h.total(s, "billing_errors_total"), rc))

    # --- exporter --binary PATH-as-the-container-sees-it --------------------------------
    ex = h.Exporter(ct.EXPORTER, "--binary", INSIDE, "--metrics", "business")
    expected = 0
    try:
        svc.fire(svc.host_pids(), ROUNDS)
        expected += ROUNDS * len(svc.host_pids())
        s = ex.samples()
        check(h.total(s, "billing_invoices_total") == expected
              and h.total(s, "billing_exporter_target_up", target="binary:" + INSIDE) == 1,
              "exporter --binary %s: all 3 processes of the running service (%s of %d)"
              % (INSIDE, h.total(s, "billing_invoices_total"), expected))
        svc.stop()
        restarted = ns_service("bind")
        try:
            restarted.fire(restarted.host_pids(), ROUNDS)
            expected += ROUNDS * len(restarted.host_pids())
            s = ex.samples()
            check(h.total(s, "billing_invoices_total") == expected,
                  "the service restarted (new namespaces, same file): counted again, nothing twice (%s of %d)"
                  % (h.total(s, "billing_invoices_total"), expected))
        finally:
            restarted.stop()
        fresh = ns_service("copy")
        try:
            path = "/proc/%d/root%s" % (fresh.parent, INSIDE)
            ct.wait_until(lambda: ("attached to /proc/" in ex.output() and INSIDE in ex.output()),
                          "the exporter to attach to the new file")
            fresh.fire(fresh.host_pids(), ROUNDS)
            expected += ROUNDS * len(fresh.host_pids())
            s = ex.samples()
            check(h.total(s, "billing_invoices_total") == expected
                  and h.total(s, "billing_errors_total") == expected,
                  "a service from a new copy (a new file at %s, %s): attached and counted exactly (%s of %d)"
                  % (INSIDE, path, h.total(s, "billing_invoices_total"), expected))
        finally:
            fresh.stop()
    finally:
        rc, output = ex.stop()
    check(rc == 0, "the exporter exits 0 on SIGTERM (%d)" % rc)
    attached = re.findall(r"attached to (\S+)", output)
    check(len(attached) == 1, "exactly one new file attached by the watcher (%s)" % attached)
finally:
    svc.stop()
    shutil.rmtree(hidden, ignore_errors=True)

finish()

#!/usr/bin/env python3
"""Bad input: one line naming the problem on stderr, exit 2, never a
crash -- a PID that does not exist, a binary without billing probes, a
file that is not ELF, no permission to load BPF (as user nobody), a port
in use, unknown options, an --idle-detach out of range.  And a --pid target that exits: /metrics keeps
serving with its up metric at 0; /healthz and / answer."""
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")


def no_such_pid():
    pid = 4194000
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


def one_line_exit_2(what, cmd, want, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)
    lines = p.stderr.strip().splitlines()
    bt.check(p.returncode == 2 and len(lines) == 1 and want in lines[0]
             and lines[0].startswith("billing-exporter: "),
             "%s: exit 2, one line with %r (got %d: %r)" % (what, want, p.returncode, p.stderr))


with tempfile.NamedTemporaryFile("w", suffix=".txt") as text_file, socket.socket() as busy:
    text_file.write("not an ELF\n")
    text_file.flush()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    busy_port = busy.getsockname()[1]
    listen0 = ["--listen", "127.0.0.1:0"]
    one_line_exit_2("no such PID", [exe, "--pid", str(no_such_pid())] + listen0, "no such process")
    one_line_exit_2("PID not a number", [exe, "--pid", "12ab"] + listen0, "not a process ID")
    one_line_exit_2("no target", [exe] + listen0, "no target")
    one_line_exit_2("binary without billing probes", [exe, "--binary", "/bin/true"] + listen0,
                    "no billing probes")
    one_line_exit_2("not ELF", [exe, "--binary", text_file.name] + listen0, "not an ELF")
    one_line_exit_2("no such file", [exe, "--binary", "/nonexistent/billingd"] + listen0, "no such file")
    one_line_exit_2("port in use", [exe, "--binary", fire, "--listen", "127.0.0.1:%d" % busy_port],
                    "in use")
    one_line_exit_2("unknown group", [exe, "--binary", fire, "--metrics", "business,nope"], "unknown group")
    one_line_exit_2("bad --listen", [exe, "--binary", fire, "--listen", "localhost"], "--listen")
    one_line_exit_2("unclosed IPv6 --listen", [exe, "--binary", fire, "--listen", "[::1:9477"], "--listen")
    one_line_exit_2("not an address", [exe, "--binary", fire, "--listen", "billing.example:9477"],
                    "not an IPv4 or IPv6 address")
    one_line_exit_2("unknown option", [exe, "--binary", fire, "--frobnicate"], "unknown")
    for idle in ("0", "86401", "30s", ""):
        one_line_exit_2("--idle-detach %r" % idle, [exe, "--binary", fire, "--idle-detach", idle],
                        "--idle-detach needs an integer 1..86400")
    one_line_exit_2("unprivileged BPF load",
                    ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                     exe, "--binary", fire] + listen0, "no permission to load BPF")

# --listen [IPv6]:PORT serves as IPv4 does.
ex6 = h.Exporter(exe, "--binary", fire, listen="[::1]:0")
try:
    status6, _, body6 = h.http_get(ex6.url + "/healthz")
    metrics6 = h.http_get(ex6.url + "/metrics")[2].decode()
finally:
    rc6, _ = ex6.stop()
bt.check(ex6.url.startswith("http://[::1]:") and status6 == 200 and body6 == b"ok\n"
         and "billing_exporter_target_up" in metrics6 and rc6 == 0,
         "--listen [::1]:0 serves /healthz and /metrics on %s" % ex6.url)


def reuse_pid(pid):
    """A new process given PID (root: /proc/sys/kernel/ns_last_pid names the
    PID before the next one), or None when another process took it first."""
    for _ in range(20):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = subprocess.Popen(["sleep", "60"])
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


# A --pid target that exits: the exporter keeps serving, its up drops to 0,
# and stays 0 when a later process is given the same PID.
reuser = None
prog = h.FireProgram(fire, "threads", "1", "10")
ex = h.Exporter(exe, "--pid", str(prog.pid))
try:
    prog.fired()
    before = h.total(ex.samples(), "billing_exporter_target_up", target="pid:%d" % prog.pid)
    prog.release()
    time.sleep(0.2)
    s = ex.samples()
    status, _, body = h.http_get(ex.url + "/healthz")
    index = h.http_get(ex.url + "/")[2].decode()
    reuser = reuse_pid(prog.pid)
    up_after_reuse = h.total(ex.samples(), "billing_exporter_target_up", target="pid:%d" % prog.pid)
finally:
    rc, out = ex.stop()
    prog.release()
    if reuser is not None:
        reuser.kill()
        reuser.wait()
bt.check(before == 1, "target up while it runs")
bt.check(h.total(s, "billing_exporter_target_up", target="pid:%d" % prog.pid) == 0,
         "target up 0 once it exited; /metrics still serves")
bt.check(reuser is not None, "a new process was given the exited target's PID %d" % prog.pid)
bt.check(up_after_reuse == 0, "target up stays 0 when its PID is reused by another process (%s)" % up_after_reuse)
bt.check(h.total(s, "billing_requests_total") == 10, "its counts stay")
bt.check(status == 200 and body == b"ok\n", "/healthz answers ok")
bt.check('href="/metrics"' in index, "/ links /metrics")
bt.check(rc == 0, "SIGTERM: exit 0")
bt.finish()

#!/usr/bin/env python3
"""What billing-exporter needs without root is what works (issue 20,
finding 7: the docs listed CAP_BPF and CAP_PERFMON, which did not work).

The list is read from docs/security.md (the line "Capabilities, as
tested: ..."); the exporter runs as uid 65534 with exactly those
capabilities (bounding, inheritable and ambient sets: nothing else) against
a root process and must count its fires exactly; without any one of them it
must fail.  The exporter's own refusal message and docs/exporter.md must
name the same list.  On the code before, the message and docs/exporter.md
named CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE.  Needs root (to hand out
capabilities) and setpriv."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sectest import bt, h  # noqa: E402

h.require_exporter_can_run()
bt.require_root("handing out capabilities")
setpriv = bt.require_program("setpriv", "util-linux")
exe, fire = h.env_path("BX_EXPORTER"), h.env_path("BX_FIRE_STATIC")
DOCS = os.path.join(bt.SOURCE_ROOT, "docs")
NOBODY = 65534

text = open(os.path.join(DOCS, "security.md")).read()
m = re.search(r"^Capabilities, as tested: (.*)$", text, flags=re.M)
caps = re.findall(r"CAP_[A-Z_]+", m.group(1)) if m else []
bt.check(caps, "docs/security.md names the capabilities as tested (%s)" % caps)
if not caps:
    bt.finish()

# the exporter where uid 65534 can run it
tmp = tempfile.mkdtemp(prefix="bx-caps-")
os.chmod(tmp, 0o755)
exporter = os.path.join(tmp, "billing-exporter")
shutil.copy(exe, exporter)
os.chmod(exporter, 0o755)


def as_nobody(with_caps):
    names = ",".join("+" + c[len("CAP_"):].lower() for c in with_caps)
    sets = ["--bounding-set", "-all" + ("," + names if names else "")]
    if names:
        sets += ["--inh-caps", "-all," + names, "--ambient-caps", names]
    else:
        sets += ["--inh-caps", "-all"]
    return [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups", *sets, "--"]


def counts(with_caps):
    """(requests counted, fired, stderr) of a root process, the exporter run
    as uid 65534 with with_caps."""
    prog = h.FireProgram(fire, "threads", "1", "50")
    fired = None
    try:
        p = subprocess.Popen(as_nobody(with_caps) + [exporter, "--pid", str(prog.pid), "--once", "--interval", "3",
                                                     "--format", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the fire, or the exporter giving up, whichever comes first
        result = []

        def wait_fire():
            try:
                result.append(prog.fired(timeout=30)["request_done"])
            except RuntimeError:
                pass
        waiter = threading.Thread(target=wait_fire, daemon=True)
        waiter.start()
        deadline = time.monotonic() + 30
        while waiter.is_alive() and p.poll() is None and time.monotonic() < deadline:
            waiter.join(0.2)
        fired = result[0] if result else None
        out, err = p.communicate(timeout=60)
    finally:
        if fired is None:  # still waiting for an exporter that never attached: stdin does not end that wait
            prog.proc.kill()
        prog.release()
    got = sum(float(v) for v in re.findall(r'"metric":"billing_requests_total".*"value":([0-9.]+)', out))
    return got, fired, err.strip()


try:
    got, fired, err = counts(caps)
    bt.check(fired == 50 and got == 50, "uid %d with exactly %s counts a root process's fires (%s of %s; %s)"
             % (NOBODY, ",".join(caps), got, fired, err.splitlines()[-1:] if err else ""))
    for c in caps:
        less = [x for x in caps if x != c]
        got, fired, err = counts(less)
        bt.check(got == 0, "without %s it cannot (%s counted; %s)" % (c, got, err.splitlines()[-1:] if err else ""))
    target = os.path.join(tmp, "service")
    shutil.copy(fire, target)
    os.chmod(target, 0o755)
    r = subprocess.run(as_nobody([]) + [exporter, "--binary", target, "--once", "--interval", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    named = set(re.findall(r"CAP_[A-Z_]+", r.stderr))
    bt.check(r.returncode == 2 and named == set(caps),
             "with none, its one-line refusal names exactly that list (%s)" % r.stderr.strip())
    exporter_md = open(os.path.join(DOCS, "exporter.md")).read()
    lines = [l for l in exporter_md.splitlines() if "CAP_" in l]
    bt.check(lines and all(set(re.findall(r"CAP_[A-Z_]+", l)) <= set(caps) | {"CAP_SYS_ADMIN", "CAP_SYS_RESOURCE",
                                                                              "CAP_DAC_READ_SEARCH"}
                           and set(caps) <= set(re.findall(r"CAP_[A-Z_]+", exporter_md)) for l in lines),
             "docs/exporter.md names the tested list (%s)" % lines)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
bt.finish()

#!/usr/bin/env python3
"""check, list and doctor of the installed kit on the service built
against it, plain and stats builds (docs/tool.md):

- `billing-probes check ./service`, the README's CI one-liner: exit 0,
  every probe of billing.d found, those of the timing helpers in the
  libbillingprobes.so the executable loads (its DT_NEEDED entries), and
  the verdict names that library as the module carrying them;
- `check ./service LIB` (the two-target form): exit 0;
- `list -p WORKER`: every probe of billing.d, each in the module that
  carries it (the service's own in the executable, the helpers' in the
  library), none traced;
- `doctor`, `doctor WORKER` and `doctor ./service`: exit 0, no FAIL.
Needs root for doctor's privilege line to be OK (CI runs as root)."""
import json
import os
import shutil
import tempfile

import userpathtest as up
from userpathtest import bt

up.require_work()
bt.require_root("doctor's checks of this host")
ALL_PROBES = {bt.elf_name(p.name) for p in up.PROVIDER.probes}
SPAN_PROBES = {bt.elf_name(p.name) for s in up.billing_d.spans(up.PROVIDER.probes) for p in (s.start, s.done)}


def tool(kit, *args):
    return bt.run([kit.tool, *args], timeout=120)


def check_kit(variant, kit):
    what = "%s kit" % variant
    service_dir = os.path.dirname(kit.service)
    r = bt.run([kit.tool, "check", "./service"], cwd=service_dir)
    bt.check(r.returncode == 0 and "missing" not in r.stdout + r.stderr,
             "%s: `billing-probes check ./service`: exit 0, every probe found (exit %d: %s)"
             % (what, r.returncode, " | ".join((r.stdout + r.stderr).strip().splitlines()[-3:])))
    bt.check(kit.soname in r.stdout,
             "%s: check ./service names the library that carries the helpers' probes (%s)" % (what, kit.soname))
    r = tool(kit, "check", kit.service, kit.lib)
    bt.check(r.returncode == 0, "%s: check SERVICE LIB: exit 0 (%s)" % (what, r.stdout.strip().splitlines()[-1:]))

    books_dir = tempfile.mkdtemp(prefix="userpath-books-")
    svc = up.Service(kit, books_dir, env=dict(os.environ, BILLING_STATS="off"))
    try:
        worker = svc.workers[0]
        r = tool(kit, "list", "-p", str(worker), "--json")
        rows = json.loads(r.stdout)["probes"] if r.returncode == 0 else []
        where = {}
        for p in rows:
            if p["provider"] == "billing":
                where.setdefault(p["name"], set()).add(os.path.realpath(p["module"]))
        want = {n: {kit.lib if n in SPAN_PROBES else os.path.realpath(kit.service)} for n in ALL_PROBES}
        bt.check(where == want, "%s: list -p WORKER: all %d probes, each in its module (%d rows; %s)"
                 % (what, len(ALL_PROBES), len(rows), {n: sorted(m) for n, m in where.items() if want.get(n) != m}))
        bt.check(rows and not any(p["traced"] for p in rows), "%s: list -p WORKER: nothing traced" % what)
        for target in ([], [str(worker)], ["./service"]):
            r = bt.run([kit.tool, "doctor", *target], cwd=service_dir, timeout=120)
            fails = [l for l in r.stdout.splitlines() if l.startswith("FAIL")]
            bt.check(r.returncode == 0 and not fails, "%s: doctor %s: exit 0, no FAIL (exit %d %s)"
                     % (what, " ".join(target) or "(the host)", r.returncode, fails))
    finally:
        svc.stop()
        shutil.rmtree(books_dir, ignore_errors=True)


up.check_each_kit(check_kit)

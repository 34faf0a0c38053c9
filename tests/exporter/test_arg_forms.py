#!/usr/bin/env python3
"""Every operand form, read exactly whatever libbpf the exporter was built
with (arg_forms.c): payment-auth fired from sites whose notes put its
arguments in registers, in memory on the stack, as constants, and its
32-bit result in a register whose upper half holds garbage.  Attached with
--pid through one multi-uprobe link, then (BILLING_EXPORTER_UPROBES=
per-site, what a kernel without them gets) through a uprobe per site, the
exporter counts each site's fires, declines by code, amounts and
durations exactly as the program fired them.  Its programs read the specs
it wrote itself: no map of libbpf's USDT support (whose spec layout libbpf
1.7 changed) is among its maps.  A file with a payment-auth site of five
arguments (billing.d declares six) is refused in one line, not read with
a sixth of 0; a BILLING_EXPORTER_UPROBES that is neither "multi" nor
"per-site" is one line and exit 2.  The libbpf the exporter runs with is printed first, so a
run in each distribution's root says which one it checked."""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exportertest as h  # noqa: E402
from exportertest import bt  # noqa: E402

h.require_exporter_can_run()
exe = h.env_path("BX_EXPORTER")
if not os.environ.get("BX_ARG_FORMS"):
    bt.skip("arg_forms.c is built for x86-64 only")
forms, mismatch = h.env_path("BX_ARG_FORMS"), h.env_path("BX_ARG_FORMS_MISMATCH")
ROUNDS = 3

# gateway: (currency, result, amount_minor, duration_ns) as arg_forms.c fires them
SITES = {
    "reg": ("EUR", 0, 1234, 1500),
    "mem": ("USD", 51, -250, 2000000000),
    "const": ("GBP", 7, -9000000000, 0),
    "narrow": ("JPY", -2, 1 << 40, 3000),
}


def libbpf_of(path):
    """The libbpf shared object path loads, resolved (its name has the version)."""
    p = bt.run(["ldd", path])
    m = re.search(r"libbpf\.so\S* => (\S+)", p.stdout)
    return os.path.realpath(m.group(1)) if m else "no libbpf in ldd's output: " + p.stdout.strip()


def map_names(pid):
    bpftool = shutil.which("bpftool") or shutil.which("bpftool", path="/usr/sbin:/sbin")
    names = []
    for map_id in h.fd_info(pid, "map_id"):
        p = bt.run([bpftool, "map", "show", "id", map_id])
        m = re.match(r"\d+: \S+\s+name (\S+)", p.stdout)
        names.append(m.group(1) if m else "?" + map_id)
    return names


def check_figures(mode, s):
    for gw, (currency, result, amount, ns) in SITES.items():
        outcome = "approved" if result == 0 else "declined"
        got = h.total(s, "billing_payments_total", gateway=gw, currency=currency, outcome=outcome)
        bt.check(got == ROUNDS, "%s: %s: payments{currency=%s,outcome=%s} = %d (got %s)"
                 % (mode, gw, currency, outcome, ROUNDS, got))
        got = h.total(s, "billing_payment_declines_total", gateway=gw)
        want = 0 if result == 0 else ROUNDS
        code = h.total(s, "billing_payment_declines_total", gateway=gw, code=str(result))
        bt.check(got == want and code == want, "%s: %s: declines = %d, all with code %d (got %s, %s with it)"
                 % (mode, gw, want, result, got, code))
        got = h.total(s, "billing_payment_amount_minor_total", gateway=gw)
        bt.check(got == ROUNDS * amount, "%s: %s: amount_minor summed = %d (got %s)" % (mode, gw, ROUNDS * amount, got))
        count = h.total(s, "billing_payment_auth_duration_seconds_count", gateway=gw)
        total_ns = round(h.total(s, "billing_payment_auth_duration_seconds_sum", gateway=gw) * 1e9)
        want = (ROUNDS, ROUNDS * ns) if ns else (0, 0)  # 0 ns: not measured, not observed
        bt.check((count, total_ns) == want, "%s: %s: durations observed %d, summing %d ns (got %s, %s)"
                 % (mode, gw, want[0], want[1], count, total_ns))


def run(mode):
    prog = h.FireProgram(forms)
    ex = None
    try:
        try:
            ex = h.Exporter(exe, "--pid", str(prog.pid), "--metrics", "business",
                            env={"BILLING_EXPORTER_UPROBES": mode})
        except RuntimeError as e:
            if mode == "multi" and "no multi-uprobe links" in str(e):
                print("note: this kernel has no multi-uprobe links; only per-site attachment is checked")
                return
            raise
        links = h.fd_info(ex.proc.pid, "link_type")
        want = ["uprobe_multi"] if mode == "multi" else ["perf"] * len(SITES)
        bt.check(links == want, "%s: the exporter's links are %s (got %s)" % (mode, want, links))
        names = map_names(ex.proc.pid)
        bt.check("bx_usdt_specs" in names and not any(n.startswith("__bpf_usdt") for n in names),
                 "%s: the programs read bx_usdt_specs, no map of libbpf's USDT support (maps: %s)"
                 % (mode, " ".join(sorted(names))))
        for _ in range(ROUNDS):
            prog.proc.stdin.write("go\n")
            prog.proc.stdin.flush()
            bt.check(prog.proc.stdout.readline().strip() == "fired", "%s: the program fired its sites" % mode)
        check_figures(mode, ex.samples())
        rc, _ = ex.stop()
        ex = None
        bt.check(rc == 0, "%s: the exporter exits 0 on SIGTERM (rc=%s)" % (mode, rc))
    finally:
        if ex:
            ex.stop()
        prog.release()


print("libbpf: %s" % libbpf_of(exe))
for mode in ("multi", "per-site"):
    run(mode)

prog = h.FireProgram(forms)
try:
    p = bt.run([exe, "--pid", str(prog.pid), "--listen", "127.0.0.1:0"],
               env=dict(os.environ, BILLING_EXPORTER_UPROBES="sometimes"), timeout=60)
    bt.check(p.returncode == 2 and p.stderr.count("\n") == 1 and "BILLING_EXPORTER_UPROBES" in p.stderr,
             "BILLING_EXPORTER_UPROBES=sometimes: exit 2, one line naming it (got %s: %r)" % (p.returncode, p.stderr))
finally:
    prog.release()

prog = h.FireProgram(mismatch)
try:
    try:
        ex = h.Exporter(exe, "--pid", str(prog.pid), "--metrics", "business")
        ex.stop()
        out, refused = ex.output(), False
    except RuntimeError as e:
        out, refused = str(e), True
    lines = [l for l in out.splitlines() if "has 5 arguments, billing.d declares 6" in l]
    bt.check(refused and len(lines) == 1 and "target skipped" in lines[0],
             "a payment-auth site of five arguments: the target refused in one line (%s)" % out.strip()[-400:])
finally:
    prog.release()
bt.finish()

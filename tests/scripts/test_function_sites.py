#!/usr/bin/env python3
"""d-scripts/function_sites.py, the one transform from the USDT spelling of
the D scripts to the function-site spelling.

usage: test_function_sites.py   (no privilege, no tracer)

Every probe billing.d declares (read by billingtest's own reader) maps to
its libbillingprobes-ffi function; each shipped D script keeps no billing
provider probe after the rewrite; an unknown name or a module:function
part is one line on stderr and exit 2.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

D_SCRIPTS = os.path.join(bt.SOURCE_ROOT, "d-scripts")
sys.path.insert(0, D_SCRIPTS)
import function_sites as fs  # noqa: E402

TOOL = os.path.join(D_SCRIPTS, "function_sites.py")


def main():
    probes = bt.provider_probes()
    names = fs.probe_names(bt.PROVIDER_D)
    bt.check(names == [n for _, n, _ in probes], "the transform reads billing.d's probes in order")
    for prov, name, _ in probes:
        text = "%s$target:::%s\n{ }\nbilling*:::%s { }\n" % (prov, name, name)
        want = "pid$target::billing_fire_%s:entry" % bt.elf_name(name).replace("__", "_")
        out = fs.transform(text, names)
        bt.check(out.count(want) == 2 and "billing$" not in out and "billing*" not in out,
                 "%s -> %s" % (name, want))
    bt.check("pid1234::billing_fire_error:entry" in fs.transform("billing1234:::error {}", names),
             "a fixed PID keeps its process")

    scripts = sorted(f for f in os.listdir(D_SCRIPTS) if f.endswith(".d"))
    bt.check(scripts, "D scripts found in %s" % D_SCRIPTS)
    for name in scripts:
        src = open(os.path.join(D_SCRIPTS, name)).read()
        r = bt.run([sys.executable, TOOL, os.path.join(D_SCRIPTS, name)])
        uses_billing = bool(fs.PROBE_DESC.search(src))
        left = re.findall(r"^\s*billing[^\s]*:::", r.stdout, re.M)
        bt.check(r.returncode == 0 and not left and r.stdout.startswith(src.split("\n")[0]) and
                 (not uses_billing or "pid$target::billing_fire_" in r.stdout),
                 "%s: rewritten, #! line kept, no billing provider clause left" % name)

    with tempfile.TemporaryDirectory() as tmp:
        for body, what in (("billing$target:::no-such-probe { }", "an unknown probe name"),
                           ("billing$target:a.out:main:error { }", "a module:function part")):
            path = os.path.join(tmp, "bad.d")
            open(path, "w").write(body + "\n")
            r = bt.run([sys.executable, TOOL, path])
            lines = r.stderr.strip().split("\n")
            bt.check(r.returncode == 2 and len(lines) == 1 and lines[0].startswith("function_sites.py: "),
                     "%s: exit 2 with one line (%s)" % (what, r.stderr.strip()))
    bt.finish()


if __name__ == "__main__":
    main()

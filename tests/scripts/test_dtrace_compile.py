#!/usr/bin/env python3
"""Compiles every D script in d-scripts/ with a real D compiler (Oracle's
DTrace for Linux in CI): dtrace -e exits after compiling, before enabling.

usage: test_dtrace_compile.py D_SCRIPTS_DIR WORKLOAD

Each script is compiled once per argument combination its USAGE line
documents ("[THRESHOLD_MS [INTERVAL_S [JSON]]]": none, one, two, three
arguments), in both spellings:
  - as shipped (billing$target:::NAME), with -Z: Oracle's DTrace cannot
    see stapsdt probes, so those clauses match nothing here;
  - in the function-site spelling (d-scripts/function_sites.py), against
    scripts-workload started with -c: the pid provider resolves every
    billing_fire_<probe>() entry, so each clause is compiled for real.
-C where the #! line says -Cs.  Skips (77, with the reason) only where no
real DTrace is installed (tests/install-deps.sh builds it in CI).
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

# a value for each argument a USAGE line may name; a new name must be added here
SAMPLE_ARGS = {"INTERVAL_S": "1", "THRESHOLD_MS": "30", "JSON": "1"}


def documented_combinations(text, name):
    """[[], ["30"], ["30", "1"], ...] from the script's first USAGE line."""
    m = re.search(r"USAGE:[^\n]*", text)
    if not m:
        return None, "%s: no USAGE line" % name
    names = re.findall(r"\[([A-Z_]+)", m.group(0))
    unknown = [n for n in names if n not in SAMPLE_ARGS]
    if unknown:
        return None, "%s: USAGE names %s; give it a sample value in SAMPLE_ARGS" % (name, unknown)
    args = [SAMPLE_ARGS[n] for n in names]
    return [args[:i] for i in range(len(args) + 1)], None


def main():
    d_dir, workload = sys.argv[1], os.path.abspath(sys.argv[2])
    sys.path.insert(0, d_dir)
    import function_sites as fs
    exe = bt.require_dtrace()
    names = fs.probe_names(bt.PROVIDER_D)
    scripts = sorted(f for f in os.listdir(d_dir) if f.endswith(".d"))
    bt.check(scripts, "D scripts found in %s" % d_dir)
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "billing-dtrace-compile-%d" % os.getpid())
    os.makedirs(tmp, exist_ok=True)
    try:
        for name in scripts:
            path = os.path.join(d_dir, name)
            text = open(path).read()
            cpp = ["-C"] if re.match(r"#![^\n]*-C", text) else []
            combos, why = documented_combinations(text, name)
            if not bt.check(combos is not None, why or name):
                continue
            fsite = os.path.join(tmp, name)
            with open(fsite, "w") as f:
                f.write(fs.transform(text, names, name))
            for args in combos:
                for spelling, cmd in (
                        ("usdt", [exe, "-e", "-q", "-Z"] + cpp + ["-s", path, "-c", "/bin/true"]),
                        ("function sites", [exe, "-e", "-q"] + cpp +
                         ["-s", fsite, "-c", "%s business --delay-ms 0 --linger-ms 0" % workload])):
                    r = bt.run(cmd + args, timeout=120)
                    out = (r.stdout + r.stderr).strip()
                    bt.check(r.returncode == 0 and "failed to compile" not in out,
                             "%s %s (%s) compiles%s" % (name, " ".join(args) or "(no args)", spelling,
                                                        "" if r.returncode == 0 else ": " + out))
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    bt.finish()


if __name__ == "__main__":
    main()

"""billing-probes list on files: the same probes and addresses as
`readelf -n` (of the file and of each library it loads), JSON that parses
back to the same listing as the table, and the -P / -n filters.

A file's listing holds the probes of the libraries it loads, found as the
dynamic loader finds them: a program built against libbillingprobes.so
lists the helpers' probes in the library beside its own, each under its
module, the same probes `list PID` shows of a process running it; a copy
whose loader would not find the library lists its own and says in one
line which library is not found and where it was looked for, exit 2 (the
listing is partial).  On the code before, `list FILE` showed the
executable's probes alone."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tooltest import LIB_ALL, LIB_HELPERS, PROGRAM, catalogue, check, finish, need_probes, run  # noqa: E402

SHARED_PROGRAM = os.environ.get("BP_SHARED_PROGRAM", "")
# the loader's own search, not the test harness's
PLAIN = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}

need_probes()


def readelf_probes(path):
    """(provider, name, location, semaphore, args) from readelf -n."""
    out = subprocess.run(["readelf", "-n", "--wide", path], capture_output=True, text=True, check=True).stdout
    probes = []
    for m in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), "
                         r"Semaphore: (0x[0-9a-f]+)\s+Arguments: ?([^\n]*)", out):
        probes.append((m.group(1), m.group(2), int(m.group(3), 16), int(m.group(5), 16), m.group(6).strip()))
    return probes


def tool_probes(path, extra=()):
    rc, out, err = run(["list", path, "--json"] + list(extra), env=PLAIN)
    check(rc == 0, "list --json %s exits 0 (rc=%d %r)" % (path, rc, err))
    return json.loads(out)


def by_module(doc):
    """{real path of module: sorted [(provider, name, address, semaphore, args)]}."""
    out = {}
    for p in doc["probes"]:
        out.setdefault(os.path.realpath(p["module"]), []).append(
            (p["provider"], p["name"], int(p["address"], 16), int(p["semaphore"] or "0", 16), p["args"]))
    return {m: sorted(v) for m, v in out.items()}


for path in (PROGRAM, LIB_ALL, LIB_HELPERS, SHARED_PROGRAM):
    ref = readelf_probes(path)
    doc = tool_probes(path)
    modules = by_module(doc)
    got = modules.pop(os.path.realpath(path), [])
    check(len(ref) > 0, "readelf -n finds %d probes in %s" % (len(ref), path))
    check(got == sorted(ref), "list and readelf -n agree on %s: same probes, addresses, semaphores, "
          "argument strings (%d vs %d)" % (path, len(got), len(ref)))
    for lib, probes in modules.items():  # the libraries it loads
        check(probes == sorted(readelf_probes(lib)), "list %s: the probes of the library it loads, %s, as readelf -n "
              "finds them there (%d)" % (os.path.basename(path), lib, len(probes)))
    # Decoded arguments agree with the raw spec string.
    decoded_ok = all(
        " ".join(("-" if a["signed"] else "") + "%d@%s" % (a["size"], a["location"]) for a in p["arguments"])
        == p["args"] for p in doc["probes"])
    check(decoded_ok, "decoded arguments of %s re-encode to the note's strings" % path)
    check(doc["target"] == path and doc["pid"] is None, "JSON names the target, pid null")

# A program linked against libbillingprobes.so: the library's probes too,
# the same as a process of it shows
if SHARED_PROGRAM:
    doc = tool_probes(SHARED_PROGRAM)
    modules = by_module(doc)
    helpers = os.path.realpath(LIB_HELPERS)
    check(set(modules) == {os.path.realpath(SHARED_PROGRAM), helpers} and modules[helpers],
          "list FILE of a program built against libbillingprobes.so: its probes and the library's %d (%s)"
          % (len(modules.get(helpers, [])), sorted(modules)))
    proc = subprocess.Popen([SHARED_PROGRAM, "0", "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=PLAIN)
    try:
        proc.stdout.readline()
        rc, out, err = run(["list", str(proc.pid), "--json", "-P", "billing"])
        live = {(os.path.realpath(p["module"]), p["name"], int(p["address"], 16)) for p in json.loads(out)["probes"]} \
            if rc == 0 else set()
    finally:
        proc.stdin.close()
        proc.wait()
    filed = {(m, p[1], p[2]) for m, ps in modules.items() for p in ps if p[0] == "billing"}
    check(live and filed == live, "list FILE and list PID of it show the same %d billing probes, in the same modules "
          "(%d by FILE)" % (len(live), len(filed)))
    rc, table, err = run(["list", SHARED_PROGRAM], env=PLAIN)
    check(rc == 0 and table.split()[:2] == ["MODULE", "PROVIDER"] and os.path.basename(LIB_HELPERS).split(".so")[0]
          in table, "the table names each probe's module when they come from more than one file")

    # a copy the loader would not find the library for: its own probes,
    # and one line saying which library is not found
    tmp = tempfile.mkdtemp(prefix="bp-list-")
    try:
        alone = os.path.join(tmp, "svc")
        shutil.copy(SHARED_PROGRAM, alone)
        rc, out, err = run(["list", alone, "--json"], env=PLAIN)
        modules = by_module(json.loads(out)) if out else {}
        lines = err.splitlines()
        check(rc == 2 and set(modules) == {os.path.realpath(alone)} and len(lines) == 1
              and "libbillingprobes.so.0" in lines[0] and "needed by" in lines[0] and "not listed" in lines[0],
              "a library the loader would not find: the file's own probes, one line naming the library, exit 2 "
              "(%d, %s, %r)" % (rc, sorted(modules), err))
    finally:
        shutil.rmtree(tmp)

# Argument counts in the program equal billing.d's.
cat = catalogue()
doc = tool_probes(PROGRAM, ["-P", "billing"])
counts = {(p["provider"], p["name"]): len(p["arguments"]) for p in doc["probes"]}
check(counts == cat, "every billing probe of the program has billing.d's argument count")
types = {p["name"]: [a["type"] for a in p["arguments"]] for p in doc["probes"]}
check(types["payment__auth"][1] == "int64" and types["payment__auth"][4] == "int32",
      "payment__auth: amount_minor decodes as int64, result as int32 (%s)" % types["payment__auth"])

# Table and JSON list the same rows.
rc, table, err = run(["list", PROGRAM])
rows = [l.split() for l in table.splitlines()[1:] if l.strip()]
check(table.splitlines()[0].split()[:5] == ["PROVIDER", "NAME", "ADDRESS", "SEMAPHORE", "ARGUMENTS"],
      "table header: PROVIDER NAME ADDRESS SEMAPHORE ARGUMENTS")
full = tool_probes(PROGRAM)
check(sorted((r[0], r[1], int(r[2], 16)) for r in rows) ==
      sorted((p["provider"], p["name"], int(p["address"], 16)) for p in full["probes"]),
      "table rows and JSON probes are the same %d" % len(rows))

# Filters, in both spellings of a name.
for args, want in [(["-n", "request__*"], {"request__start", "request__done"}),
                   (["-n", "request-done"], {"request__done"}),
                   (["-P", "bill*", "-n", "*__done"], {"request__done", "transaction__done", "db__query__done",
                                                       "gateway__call__done"}),
                   (["-n=error"], {"error"})]:
    names = {p["name"] for p in tool_probes(PROGRAM, args)["probes"]}
    check(names == want, "list %s -> %s" % (" ".join(args), sorted(names)))
rc, out, err = run(["list", PROGRAM, "-P", "nosuchprovider"])
check(rc == 1 and "no probe matches -P nosuchprovider" in err and out == "",
      "a filter matching nothing: exit 1, says so (%d %r)" % (rc, err))

# Usage errors are exit 2 with one line.
for args in (["list"], ["list", PROGRAM, "--bogus"], ["frobnicate"], ["list", PROGRAM, "-n"], []):
    rc, out, err = run(args)
    check(rc == 2 and len(err.splitlines()) == 1, "usage error %r: exit 2, one line (%d %r)" % (args, rc, err))
finish()

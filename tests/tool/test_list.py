"""billing-probes list on files: the same probes and addresses as
`readelf -n`, JSON that parses back to the same listing as the table,
and the -P / -n filters."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tooltest import LIB_ALL, LIB_HELPERS, PROGRAM, catalogue, check, finish, need_probes, run  # noqa: E402

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
    rc, out, err = run(["list", path, "--json"] + list(extra))
    check(rc == 0, "list --json %s exits 0 (rc=%d %r)" % (path, rc, err))
    return json.loads(out)


for path in (PROGRAM, LIB_ALL, LIB_HELPERS):
    ref = readelf_probes(path)
    doc = tool_probes(path)
    got = [(p["provider"], p["name"], int(p["address"], 16), int(p["semaphore"] or "0", 16), p["args"])
           for p in doc["probes"]]
    check(len(ref) > 0, "readelf -n finds %d probes in %s" % (len(ref), path))
    check(sorted(got) == sorted(ref), "list and readelf -n agree on %s: same probes, addresses, semaphores, "
          "argument strings (%d vs %d)" % (path, len(got), len(ref)))
    # Decoded arguments agree with the raw spec string.
    decoded_ok = all(
        " ".join(("-" if a["signed"] else "") + "%d@%s" % (a["size"], a["location"]) for a in p["arguments"])
        == p["args"] for p in doc["probes"])
    check(decoded_ok, "decoded arguments of %s re-encode to the note's strings" % path)
    check(doc["target"] == path and doc["pid"] is None, "JSON names the target, pid null")

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

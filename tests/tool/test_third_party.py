"""billing-probes list on other people's binaries: Debian's PostgreSQL
(built --enable-dtrace: 71 stapsdt sites in 15, operands such as
"40+CheckpointStats(%rip)"), CPython (executable and libpython),
libstdc++ and, when installed, OpenJDK's libjvm.  Every note agrees
with `readelf -n` (provider, name, address, semaphore, argument string),
every argument decodes (none "unknown") and re-encodes to its spec; a live
postmaster's `list PID` shows postgres's own probes; a mapped ELF file the
reader cannot read is one line on stderr and exit 2, the other modules
still listed.

The versions are the release's own, found where Debian installs them (the
newest PostgreSQL under /usr/lib/postgresql, the Python /usr/bin/python3
is): tests/install-deps.sh installs them by their unversioned names
(postgresql, libpython3-dev; libstdc++ is everywhere); libjvm is checked
only where an OpenJDK is installed (not a dependency: 200 MB for one more
file of notes)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import check, finish, run, skip  # noqa: E402


def newest(paths, key):
    """The path of PATHS with the highest KEY (a version): None if none."""
    return max(paths, key=key, default=None)


def version_of(path, pattern):
    m = re.search(pattern, path)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


# the release's PostgreSQL (15 on bookworm, 17 on trixie) and Python (3.11, 3.13)
PG_BIN = newest(glob.glob("/usr/lib/postgresql/*/bin"), lambda p: version_of(p, r"postgresql/(\d+)/"))
POSTGRES = os.path.join(PG_BIN, "postgres") if PG_BIN else "/usr/lib/postgresql/VERSION/bin/postgres"
INITDB = os.path.join(PG_BIN or "", "initdb")
PYTHON = os.path.realpath("/usr/bin/python3")
PY_VERSION = re.sub(r"^python", "", os.path.basename(PYTHON))
REQUIRED = [
    POSTGRES,
    PYTHON,
    next(iter(glob.glob("/usr/lib/*-linux-gnu/libpython%s.so.1.0" % PY_VERSION)),
         "/usr/lib/MULTIARCH/libpython%s.so.1.0" % PY_VERSION),
    next(iter(glob.glob("/usr/lib/*-linux-gnu/libstdc++.so.6")), "/usr/lib/MULTIARCH/libstdc++.so.6"),
]
OPTIONAL = [newest(glob.glob("/usr/lib/jvm/*/lib/server/libjvm.so"), lambda p: version_of(p, r"java-(\d+)"))]
OPTIONAL = [p for p in OPTIONAL if p]

missing = [p for p in REQUIRED if not os.path.exists(p)]
if missing:
    skip("not installed: %s (tests/install-deps.sh installs postgresql and libpython3-dev)" % ", ".join(missing))
print("the release's: %s, %s" % (POSTGRES, PYTHON))


def readelf_probes(path):
    """(provider, name, location, semaphore, args) of every stapsdt note."""
    out = subprocess.run(["readelf", "-n", "--wide", path], capture_output=True, text=True, check=True).stdout
    return [(m.group(1), m.group(2), int(m.group(3), 16), int(m.group(5), 16), m.group(6).strip())
            for m in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), "
                                 r"Semaphore: (0x[0-9a-f]+)\s+Arguments: ?([^\n]*)", out)]


def reencode(arg):
    """A decoded argument back to its "[-]SIZE[f]@OPERAND" spec."""
    return "%s%d%s@%s" % ("-" if arg["signed"] else "", arg["size"],
                          "f" if arg["type"].startswith("float") else "", arg["location"])


def same_as_readelf(path, doc, ref):
    """The file's own probes (a file's listing holds those of the libraries it loads too)."""
    got = [(p["provider"], p["name"], int(p["address"], 16), int(p["semaphore"] or "0", 16), p["args"])
           for p in doc["probes"] if os.path.realpath(p["module"]) == os.path.realpath(path)]
    check(sorted(got) == sorted(ref), "%s: list and readelf -n agree (%d and %d notes: probes, addresses, "
          "semaphores, argument strings)" % (path, len(got), len(ref)))
    unknown = [(p["name"], a["location"]) for p in doc["probes"] for a in (p["arguments"] or [])
               if a["kind"] == "unknown"]
    check(not unknown and all(p["arguments"] is not None for p in doc["probes"]),
          "%s: every argument decodes (unknown: %s)" % (path, unknown[:5]))
    bad = [p["args"] for p in doc["probes"] if " ".join(reencode(a) for a in p["arguments"] or []) != p["args"]]
    check(not bad, "%s: decoded arguments re-encode to the notes' strings (%s)" % (path, bad[:3]))


forms = set()
for path in REQUIRED + [p for p in OPTIONAL if os.path.exists(p)]:
    ref = readelf_probes(path)
    rc, out, err = run(["list", path, "--json"])
    check(rc == 0 and not err, "list --json %s exits 0, nothing on stderr (rc=%d %r)" % (path, rc, err[:200]))
    if rc != 0:
        continue
    doc = json.loads(out)
    same_as_readelf(path, doc, ref)
    for p in doc["probes"]:
        for a in p["arguments"] or []:
            loc = re.sub(r"%[a-z0-9]+", "%REG", a["location"])
            forms.add(re.sub(r"\b\d+\b", "N", re.sub(r"\b[A-Za-z_.][A-Za-z0-9_.$]*", "SYM", loc)))
print("operand forms seen: %s" % " ".join(sorted(forms)))

# The command of the issue: postgres's sites with their arguments (71 in
# PostgreSQL 15; as many as readelf finds in the release's).
PG_SITES = len([p for p in readelf_probes(POSTGRES) if p[0] == "postgresql"])
rc, out, err = run(["list", POSTGRES, "-P", "postgresql"])
rows = [line.split(None, 4) for line in out.splitlines()[1:] if line.strip()]
check(rc == 0 and len(rows) == PG_SITES and PG_SITES >= 50,
      "list postgres -P postgresql: the %d sites readelf finds, exit 0 (rc=%d, %d rows, %r)"
      % (PG_SITES, rc, len(rows), err[:200]))
ckpt = [r for r in rows if r[1] == "checkpoint__done"]
check(ckpt and "CheckpointStats(%rip)" in ckpt[0][4] and "unknown" not in ckpt[0][4],
      "checkpoint__done's arguments listed, 40+CheckpointStats(%%rip) among them (%s)" % (ckpt[0][4] if ckpt else None))
rc, out, err = run(["list", POSTGRES, "-n", "transaction__start"])
check(rc == 0 and len(out.splitlines()) == 2 and "transaction__start" in out,
      "list postgres -n transaction__start: one site (rc=%d %r)" % (rc, err[:200]))

# A live postmaster: its own module's 71 probes are listed with the others.
bt.require_root("starting a postmaster as user postgres")
data = tempfile.mkdtemp(prefix="bp-pg-")
postmaster = None
try:
    shutil.chown(data, "postgres", "postgres")
    as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
    r = bt.run(as_postgres + [INITDB, "-D", data + "/db", "-A", "trust", "--no-sync", "-U", "postgres"],
               timeout=600, cwd=data)
    check(r.returncode == 0, "initdb of a scratch cluster (rc=%d %s)" % (r.returncode, r.stderr[-300:]))
    if r.returncode == 0:
        log = open(os.path.join(data, "log"), "w")
        postmaster = subprocess.Popen(as_postgres + [POSTGRES, "-D", data + "/db", "-k", data,
                                                     "-c", "listen_addresses="],
                                      stdout=log, stderr=subprocess.STDOUT, cwd=data)
        pid_file = os.path.join(data, "db", "postmaster.pid")
        deadline = time.monotonic() + 300
        # postmaster.pid's 8th line is the status; "ready" once it accepts.
        while time.monotonic() < deadline and postmaster.poll() is None:
            try:
                lines = open(pid_file).read().splitlines()
                if len(lines) >= 8 and lines[7].strip() == "ready":
                    break
            except OSError:
                pass
            time.sleep(0.05)
        check(postmaster.poll() is None, "the postmaster runs (pid %d)" % postmaster.pid)
        rc, out, err = run(["list", str(postmaster.pid), "--json"], timeout=120)
        check(rc == 0 and not err, "list %d (a live postmaster) exits 0, nothing on stderr (rc=%d %r)"
              % (postmaster.pid, rc, err[:300]))
        if rc == 0:
            doc = json.loads(out)
            own = [p for p in doc["probes"] if p["provider"] == "postgresql"]
            check(len(own) == PG_SITES and all(p["module"] == POSTGRES for p in own),
                  "the postmaster's listing holds postgres's %d postgresql sites (%d)" % (PG_SITES, len(own)))
            check(all(p["runtime_address"] for p in own), "each with its run-time address")
finally:
    if postmaster is not None:
        bt.stop_process(postmaster, timeout=120)
    shutil.rmtree(data, ignore_errors=True)

# A mapped file that starts like an ELF file but is not one: the process is
# still listed, the file named on stderr, exit 2 (never a silent drop).
work = tempfile.mkdtemp(prefix="bp-bad-elf-")
holder = None
try:
    bogus = os.path.join(work, "libbroken.so")
    with open(bogus, "wb") as f:
        f.write(b"\x7fELF" + b"\x02\x01\x01" + b"\0" * 9 + b"\xff" * 4080)
    holder = subprocess.Popen([PYTHON, "-c",
                               "import mmap, sys\n"
                               "f = open(sys.argv[1], 'rb')\n"
                               "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
                               "print('mapped', flush=True)\n"
                               "sys.stdin.read()\n", bogus],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(holder.stdout.readline().strip() == "mapped", "a process maps %s" % bogus)
    rc, out, err = run(["list", str(holder.pid)], timeout=120)
    lines = err.splitlines()
    check(rc == 2, "list PID with an unreadable mapped ELF exits 2 (rc=%d)" % rc)
    check(len(lines) == 1 and bogus in lines[0] and str(holder.pid) in lines[0],
          "one stderr line names the process and the file (%r)" % err)
    check("python" + PY_VERSION in out, "the other modules' probes are still listed (python%s's)" % PY_VERSION)
finally:
    if holder is not None:
        holder.stdin.close()
        bt.stop_process(holder)
    shutil.rmtree(work, ignore_errors=True)

finish()

"""billing-probes check on a program and the libraries it loads: the
README's `billing-probes check ./your-service` for a service built the
README's way (tests/tool/shared_program.c, linked against the shared
libbillingprobes.so: the timing helpers' probes in the library).

- check PROGRAM: exit 0, every probe present, each in the module that
  carries it (the MODULE column; --json "present" and "modules");
- the libraries check finds are the loader's: the same files as ldd
  (glibc's own search) for the test programs and system programs, with
  and without LD_LIBRARY_PATH, through DT_RUNPATH and DT_RPATH with
  $ORIGIN (RPATH before LD_LIBRARY_PATH, RUNPATH after it);
- a copy whose $ORIGIN reaches no library: exit 2 and one line naming
  libbillingprobes.so.0 and the file that needs it, nothing on stdout;
- a file in the library's place that is not an ELF library (a text file,
  a device): exit 2, one line (the loader stops there too);
- the library also named as a TARGET: one module, each probe once;
- doctor PROGRAM judges the same program (its target line), and refuses
  the same way when a library is not found.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tooltest import LIB_HELPERS, catalogue, check, finish, need_probes, readelf_names, run  # noqa: E402

need_probes()

SHARED = os.environ["BP_SHARED_PROGRAM"]
SHARED_RPATH = os.environ["BP_SHARED_PROGRAM_RPATH"]
TWO = os.environ["BP_TWO_MODULE_PROGRAM"]
LIB_DIR = os.path.dirname(os.path.realpath(LIB_HELPERS))
SONAME = "libbillingprobes.so.0"
N = len(catalogue())
HELPERS = readelf_names(LIB_HELPERS)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env.update(extra)
    return env


def inode(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def ldd_files(program, env):
    """The files glibc's loader maps for program (ldd), as inodes; None
    when it reports one not found."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True, env=env).stdout
    if "not found" in out:
        return None
    files = set()
    for line in out.splitlines():
        m = re.match(r"\s*(?:\S+ => )?(/\S+) \(0x", line)
        if m:
            files.add(inode(m.group(1)))
    return files


def check_json(program, env):
    rc, out, err = run(["check", program, "--json"], env=env)
    return rc, (json.loads(out) if out.strip() else None), err


def needed_files(doc):
    return {inode(m["path"]) for m in doc["modules"] if m["needed"]}


def same_as_loader(program, env, what):
    rc, doc, err = check_json(program, env)
    want = ldd_files(program, env)
    # ldd lists the program's interpreter (ld-linux); check finds it as
    # libc's DT_NEEDED, the same file
    check(doc is not None and want is not None and needed_files(doc) == want,
          "%s: check finds the files the loader maps (ldd), %d of them (%d %r)"
          % (what, len(want or ()), rc, err[-300:]))
    return doc


def modules_of(doc):
    """{probe name: {module inode}} from --json's "present"."""
    got = {}
    for p in doc["present"]:
        got.setdefault(p["name"], set()).add(inode(p["module"]))
    return got


# --- the README's one-liner ------------------------------------------------------------
check(HELPERS and all(n not in readelf_names(SHARED) for n in HELPERS),
      "precondition: the helpers' probes %s sit in the library only" % sorted(HELPERS))
rc, out, err = run(["check", SHARED], env=clean_env())
check(rc == 0 and "ok: all %d probes" % N in out and err == "",
      "check PROGRAM (linked against %s): exit 0, all %d probes (%d %r %r)" % (SONAME, N, rc, out[-400:], err))
rows = re.findall(r"^billing:(\w+)\s+(\S.*)$", out, flags=re.M)
where = {name: inode(path) for name, path in rows}
check(len(rows) == N and all(where[n] == inode(LIB_HELPERS) for n in HELPERS)
      and all(where[n] == inode(SHARED) for n in where if n not in HELPERS),
      "the MODULE column: the %d helper probes in %s, the %d others in the program"
      % (len(HELPERS), SONAME, N - len(HELPERS)))
check(out.startswith("PROBE ") and "MODULE" in out.splitlines()[0], "the table has a header (%r)" % out[:80])

doc = same_as_loader(SHARED, clean_env(), "RUNPATH $ORIGIN/../../lib")
lib = [m for m in doc["modules"] if m["needed"] == SONAME]
check(doc["ok"] is True and len(lib) == 1 and lib[0]["needed_by"] == SHARED and lib[0]["probes"] == len(HELPERS),
      "--json: ok, %s a module needed by the program, with its %d probes (%s)" % (SONAME, len(HELPERS), lib))
check(modules_of(doc) == {n: {inode(LIB_HELPERS) if n in HELPERS else inode(SHARED)} for n in modules_of(doc)}
      and len(modules_of(doc)) == N, "--json present: each probe with the module carrying it")
same_as_loader(SHARED_RPATH, clean_env(), "RPATH $ORIGIN/../../lib")
same_as_loader(TWO, clean_env(), "the two-module program")
for program in ("/usr/bin/python3", shutil.which("bpftrace"), "/bin/ls"):
    if program and os.path.exists(program):
        same_as_loader(program, clean_env(), program)

rc, out, err = run(["check", SHARED, "--expect", "transaction-done", "--expect", "invoice-create"], env=clean_env())
check(rc == 0 and "ok: the 2 expected probes" in out, "--expect a helper probe and a program probe: exit 0 (%d %r)"
      % (rc, out[-200:]))

rc, out, err = run(["doctor", SHARED], env=clean_env(), timeout=60)
target = next((l for l in out.splitlines() if l.split()[1:2] == ["target:"]), "")
check(target.startswith("OK") and "carries all %d probes" % N in target,
      "doctor PROGRAM: the target line counts the library's probes too (%r)" % target)

rc, out, err = run(["check", SHARED, LIB_HELPERS, "--json"], env=clean_env())
doc = json.loads(out)
check(rc == 0 and all(len(v) == 1 for v in modules_of(doc).values())
      and not [m for m in doc["modules"] if m["needed"] == SONAME],
      "the library also named as a TARGET: one module, not loaded again (%d)" % rc)

# --- copies: $ORIGIN, LD_LIBRARY_PATH, RPATH before it, RUNPATH after it ------------------
with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "a", "b"))
    os.makedirs(os.path.join(tmp, "lib"))
    runpath = os.path.join(tmp, "a", "b", "svc")
    rpath = os.path.join(tmp, "a", "b", "svc-rpath")
    shutil.copy(SHARED, runpath)
    shutil.copy(SHARED_RPATH, rpath)

    for program in (runpath, rpath):
        rc, out, err = run(["check", program], env=clean_env())
        lines = err.splitlines()
        check(rc == 2 and out == "" and len(lines) == 1 and SONAME in err and "needed by %s" % program in err
              and "not found" in err and ldd_files(program, clean_env()) is None,
              "%s, no library at $ORIGIN/../../lib: exit 2, one line naming %s (the loader finds none either) "
              "(%d %r)" % (os.path.basename(program), SONAME, rc, err))
        rc, out, err = run(["doctor", program], env=clean_env(), timeout=60)
        check(rc == 2 and len(err.splitlines()) == 1 and SONAME in err,
              "doctor on it: exit 2, the same one line (%d %r)" % (rc, err))
        same_as_loader(program, clean_env(LD_LIBRARY_PATH=LIB_DIR), "%s through LD_LIBRARY_PATH"
                       % os.path.basename(program))
        rc, out, err = run(["check", program], env=clean_env(LD_LIBRARY_PATH="/nonexistent:" + LIB_DIR))
        check(rc == 0 and "ok: all %d" % N in out, "LD_LIBRARY_PATH's second directory: exit 0 (%d %r)" % (rc, err))

    copy = os.path.join(tmp, "lib", SONAME)
    shutil.copy(LIB_HELPERS, copy)
    doc = same_as_loader(runpath, clean_env(), "the copy's $ORIGIN/../../lib")
    check(inode(copy) in needed_files(doc), "... the library beside it, not the build tree's")
    both = clean_env(LD_LIBRARY_PATH=LIB_DIR)
    doc = same_as_loader(runpath, both, "RUNPATH and LD_LIBRARY_PATH")
    check(inode(LIB_HELPERS) in needed_files(doc), "... LD_LIBRARY_PATH first, as the loader")
    doc = same_as_loader(rpath, both, "RPATH and LD_LIBRARY_PATH")
    check(inode(copy) in needed_files(doc), "... RPATH first, as the loader")

    os.remove(copy)
    with open(copy, "w") as f:
        f.write("not a library\n")
    rc, out, err = run(["check", runpath], env=clean_env())
    named = os.path.join(tmp, "a", "b", "..", "..", "lib", SONAME)  # as the loader tries it
    check(rc == 2 and out == "" and len(err.splitlines()) == 1 and named in err and "not an ELF" in err,
          "a text file where the library should be: exit 2, one line naming it (%d %r)" % (rc, err))
    os.remove(copy)
    os.symlink("/dev/null", copy)
    rc, out, err = run(["check", runpath], env=clean_env())
    check(rc == 2 and out == "" and len(err.splitlines()) == 1 and named in err and "not a regular file" in err,
          "a device where the library should be: exit 2, one line, never opened (%d %r)" % (rc, err))
finish()

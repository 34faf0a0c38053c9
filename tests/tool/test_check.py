"""billing-probes check: the answer a service's CI trusts.

- the test program (every probe) and the FFI library pass;
- libbillingprobes.so (only the timing helpers' probes) fails naming the others;
- the program built with BILLING_PROBES_DISABLE fails naming every probe;
- without --provider the built-in catalogue (billing.d) is used;
- a billing.d with one probe the binary lacks: check names exactly it;
- a billing.d declaring a wrong argument count: check names that mismatch.
"""
import json
import os
import sys
import re
import shutil
import tempfile


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import (LIB_ALL, LIB_HELPERS, PROBES, PROGRAM, PROGRAM_DISABLED, PROVIDER, catalogue, check,  # noqa: E402
                      finish, readelf_names, run)

cat = catalogue()
N = len(cat)
check(N > 0, "billing.d declares %d probes (read independently)" % N)


def problem_lines(out, kind):
    return set(re.findall(r"^%s: (\w+:\w+)" % kind, out, flags=re.M))


if not PROBES:
    # A -Dprobes=disabled build: nothing carries probes, check says so.
    for target in (PROGRAM, LIB_ALL, LIB_HELPERS):
        rc, out, err = run(["check", target, "--provider", PROVIDER])
        check(rc == 1 and problem_lines(out, "missing") == {"billing:" + n for (_, n) in cat},
              "-Dprobes=disabled: check %s exits 1 naming every probe (rc=%d)" % (os.path.basename(target), rc))
    finish()


for target in (PROGRAM, LIB_ALL):
    rc, out, err = run(["check", target, "--provider", PROVIDER])
    check(rc == 0, "check %s exits 0 (rc=%d, stderr=%r)" % (os.path.basename(target), rc, err))
    check("ok: all %d probes" % N in out, "check %s says all %d present" % (os.path.basename(target), N))

# The same without --provider: the catalogue built into the tool.
rc, out, err = run(["check", PROGRAM])
check(rc == 0 and "ok: all %d probes of the built-in billing.d" % N in out,
      "check without --provider uses the built-in catalogue (%d %r %r)" % (rc, out, err))

helpers = readelf_names(LIB_HELPERS)
check(helpers and helpers < {n for (_, n) in cat}, "readelf: libbillingprobes.so carries %d of the probes" % len(helpers))
rc, out, err = run(["check", LIB_HELPERS, "--provider", PROVIDER])
check(rc == 1, "check libbillingprobes.so exits 1 (rc=%d)" % rc)
want = {"billing:" + n for (_, n) in cat if n not in helpers}
check(problem_lines(out, "missing") == want, "it names exactly the probes the library does not fire: %s"
      % sorted(problem_lines(out, "missing")))

# Several targets are checked as one program: a service and its libraries.
rc, out, err = run(["check", PROGRAM_DISABLED, LIB_HELPERS, "--provider", PROVIDER])
check(rc == 1 and problem_lines(out, "missing") == want,
      "check no-probes program + libbillingprobes.so: the union misses the same ones (%d)" % rc)
rc, out, err = run(["check", LIB_HELPERS, "--provider", PROVIDER, LIB_ALL])
check(rc == 0 and "ok: all %d" % N in out, "check libbillingprobes.so + the FFI library: all of them (%d %r)" % (rc, out))
rc, out, err = run(["check", LIB_HELPERS, "/etc/hostname", "--provider", PROVIDER])
check(rc == 2 and len(err.splitlines()) == 1 and "/etc/hostname" in err,
      "a bad second target: exit 2 naming it (%d %r)" % (rc, err))

rc, out, err = run(["check", PROGRAM_DISABLED, "--provider", PROVIDER])
check(rc == 1, "check on the no-probes build exits 1 (rc=%d)" % rc)
missing = problem_lines(out, "missing")
check(missing == {"billing:" + n for (_, n) in cat}, "it names every one of the %d probes (%d named)" % (N, len(missing)))
check("no .note.stapsdt" in out, "it says the binary has no probe notes at all")
check(err == "", "no-probes is an answer, not an error: stderr empty (%r)" % err)

rc, out, err = run(["list", PROGRAM_DISABLED])
check(rc == 2 and len(err.splitlines()) == 1 and PROGRAM_DISABLED in err,
      "list on the no-probes build: exit 2, one line naming it (%d, %r)" % (rc, err))

with tempfile.TemporaryDirectory() as tmp:
    text = open(PROVIDER).read()
    extra = os.path.join(tmp, "extra.d")
    with open(extra, "w") as f:
        f.write(text.replace("provider billing {",
                             "provider billing {\n\tprobe settlement__close(unsigned long long, int);", 1))
    rc, out, err = run(["check", PROGRAM, "--provider", extra])
    check(rc == 1, "check against a billing.d with an extra probe exits 1 (rc=%d)" % rc)
    check(problem_lines(out, "missing") == {"billing:settlement__close"} and not problem_lines(out, "mismatch"),
          "it names exactly billing:settlement__close (%r)" % out)
    check("(2 arguments)" in out, "with the declared argument count")

    # The probe the edits below work on: the first with an int argument,
    # its declaration as billing.d writes it (read by billingtest).
    victim, vargs = next((name, args) for (_, name, args) in bt.provider_probes(PROVIDER) if "int" in args)
    velf = bt.elf_name(victim)
    decl = "probe %s(%s);" % (velf, ", ".join(vargs))
    check(decl in text, "billing.d declares %r (precondition of the edits below)" % decl)

    wrong = os.path.join(tmp, "wrong.d")
    with open(wrong, "w") as f:
        f.write(text.replace(decl, "probe %s(%s);" % (velf, ", ".join(vargs + ["int"]))))
    rc, out, err = run(["check", PROGRAM, "--provider", wrong])
    check(rc == 1, "check against a billing.d with a wrong argument count exits 1 (rc=%d)" % rc)
    check(problem_lines(out, "mismatch") == {"billing:" + velf} and not problem_lines(out, "missing"),
          "it names exactly the mismatched billing:%s (%r)" % (velf, out))
    check("has %d arguments, the catalogue declares %d" % (len(vargs), len(vargs) + 1) in out, "with both counts")

    # A D file in the D spelling with hyphens is not valid D: clean error.
    for name, body, why in [
        ("unterminated.d", "provider billing { probe a(int);", "expected"),
        ("comment.d", "/* never closed\nprovider billing { probe a(int); };", "unterminated comment"),
        ("noprovider.d", "#pragma D option quiet\n", "no 'provider"),
        ("emptyarg.d", "provider billing {\n probe a(int, );\n};", "line 2: empty argument type"),
        ("twice.d", "provider billing { probe a(int); probe a(int); };", "declared twice"),
        ("binary.d", "provider billing { probe a(int\x01); };", "byte 0x01"),
    ]:
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(body)
        rc, out, err = run(["check", PROGRAM, "--provider", path])
        check(rc == 2 and len(err.splitlines()) == 1 and path in err and why in err,
              "malformed %s: exit 2, one line naming it and saying %r (%d, %r)" % (name, why, rc, err))
    rc, out, err = run(["check", PROGRAM, "--provider", tmp])
    check(rc == 2 and len(err.splitlines()) == 1 and "directory" in err, "a directory as provider file: exit 2 (%r)" % err)
    rc, out, err = run(["check", PROGRAM, "--provider", os.path.join(tmp, "absent.d")])
    check(rc == 2 and len(err.splitlines()) == 1 and "absent.d" in err, "a missing provider file: exit 2 (%r)" % err)

    # A width the site does not have: the int (4 bytes) declared long long.
    k = vargs.index("int")
    wide = os.path.join(tmp, "wide.d")
    with open(wide, "w") as f:
        f.write(text.replace(decl, "probe %s(%s);" % (velf, ", ".join(vargs[:k] + ["long long"] + vargs[k + 1:]))))
    rc, out, err = run(["check", PROGRAM, "--provider", wide])
    check(rc == 1 and problem_lines(out, "mismatch") == {"billing:" + velf}
          and "argument %d is 4 bytes wide, the catalogue declares 8" % (k + 1) in out,
          "a billing.d declaring a wider argument: mismatch naming argument %d and both widths (%d %r)"
          % (k + 1, rc, out))
    # A probe of the provider that billing.d does not know is an error even
    # when nothing is expected of it.
    fewer = os.path.join(tmp, "fewer.d")
    with open(fewer, "w") as f:
        f.write(text.replace(decl, ""))
    other = next(n for (_, n) in cat if n != velf)
    rc, out, err = run(["check", PROGRAM, "--provider", fewer, "--expect", other])
    check(rc == 1 and problem_lines(out, "unknown") == {"billing:" + velf},
          "a probe billing.d does not declare: 'unknown', exit 1, whatever is expected (%d %r)" % (rc, out))

    # (void) and named arguments count as D does.
    ok_d = os.path.join(tmp, "forms.d")
    with open(ok_d, "w") as f:
        f.write("typedef struct x { int a; } x_t;\n#define FOO 1\n// line comment\n"
                "provider billing { probe request__start(unsigned long long id, char *handler); };\n"
                "provider other { probe tick(void); };\n")
    rc, out, err = run(["check", PROGRAM, "--provider", ok_d])
    check(rc == 1 and problem_lines(out, "missing") == {"other:tick"},
          "typedef, #define, // comments, named args and (void) parse; other:tick (0 args) missing (%r %r)" % (out, err))

# --- expectations (issue 14): the probes a service promises -------------------
names = [n for (_, n) in cat]
helpers_only = sorted(helpers)
# The timing helpers' probes, in both spellings and as a glob.
for args in (["--expect", n.replace("__", "-")] for n in helpers_only), (["--expect", n] for n in helpers_only):
    flat = [a for pair in args for a in pair]
    rc, out, err = run(["check", LIB_HELPERS] + flat)
    check(rc == 0 and "ok: the %d expected probes" % len(helpers) in out,
          "check libbillingprobes.so --expect each helper probe: exit 0 (%d %r %r)" % (rc, out, err))
rc, out, err = run(["check", PROGRAM, "--expect", "request-*"])
info = problem_lines(out, "info")
check(rc == 0 and info == {"billing:" + n for n in names if not n.startswith("request__")},
      "check PROGRAM --expect 'request-*': exit 0, the rest reported as information (%d %r)" % (rc, out))
rc, out, err = run(["check", LIB_HELPERS, "--expect", "payment-auth", "--expect", "request__start"])
check(rc == 1 and problem_lines(out, "missing") == {"billing:payment__auth"},
      "an expected probe absent: missing, exit 1 (%d %r)" % (rc, out))
with tempfile.TemporaryDirectory() as tmp:
    listing = os.path.join(tmp, "probes.expected")
    with open(listing, "w") as f:
        f.write("# what libbillingprobes.so promises\n\n" +
                "".join("%s   # helper\n" % n.replace("__", "-") for n in helpers_only))
    rc, out, err = run(["check", LIB_HELPERS, "--expect-file", listing])
    check(rc == 0, "--expect-file with comments and blank lines: exit 0 (%d %r %r)" % (rc, out, err))
    with open(listing, "a") as f:
        f.write("payment-auth\n")
    rc, out, err = run(["check", LIB_HELPERS, "--expect-file", listing])
    check(rc == 1 and problem_lines(out, "missing") == {"billing:payment__auth"},
          "--expect-file naming a probe the library lacks: missing, exit 1 (%d %r)" % (rc, out))
    bad_file = os.path.join(tmp, "bad.expected")
    with open(bad_file, "w") as f:
        f.write("request-start\nno-such-probe\n")
    for args, why in ((["--expect", "no-such-probe"], "matches no probe"),
                      (["--expect-file", bad_file], "bad.expected:2: expected probe 'no-such-probe'"),
                      (["--expect-file", os.path.join(tmp, "absent")], "absent"),
                      (["--expect-file", tmp], "not a regular file"),
                      (["--expect"], "needs a probe name")):
        rc, out, err = run(["check", LIB_HELPERS] + args)
        check(rc == 2 and len(err.splitlines()) == 1 and why in err,
              "bad expectation %r: exit 2, one line saying %r (%d %r)" % (args, why, rc, err))

# --- check --json ---------------------------------------------------------------
rc, out, err = run(["check", LIB_HELPERS, "--json", "--expect", "request-*", "--expect", "payment-auth"])
doc = json.loads(out)
kinds = {(f["kind"], f["name"]) for f in doc["findings"]}
check(rc == 1 and doc["ok"] is False and doc["problems"] == 1 and ("missing", "payment__auth") in kinds
      and doc["targets"] == [LIB_HELPERS]
      and doc["expected"] == len([n for n in names if n.startswith("request__")]) + 1
      and doc["expected_found"] == len([n for n in helpers if n.startswith("request__")]),
      "check --json: the verdict, the counts and the missing probe (%d %r)" % (rc, out))
check({n for (k, n) in kinds if k == "unexpected"} == {n for n in helpers if not n.startswith("request__")},
      "check --json: present-but-not-expected listed as 'unexpected', not problems")
rc, out, err = run(["check", PROGRAM, "--json"])
doc = json.loads(out)
check(rc == 0 and doc["ok"] is True and doc["findings"] == [] and doc["expected"] == N,
      "check --json on the full program: ok, no findings (%d)" % rc)

# --- list --provider FILE.d: the probes that file declares ------------------------
with tempfile.TemporaryDirectory() as tmp:
    one = os.path.join(tmp, "one.d")
    with open(one, "w") as f:
        f.write("provider billing { probe payment__auth(unsigned long long, long long, char *, char *, int, "
                "unsigned long long); };\n")
    rc, out, err = run(["list", PROGRAM, "--provider", one, "--json"])
    check(rc == 0 and [p["name"] for p in json.loads(out)["probes"]] == ["payment__auth"],
          "list --provider FILE.d lists the probes that file declares (%d %r)" % (rc, err))

# --- a file under a directory the user cannot enter: "permission denied" ---------
if os.geteuid() == 0 and shutil.which("setpriv"):
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o700)
        hidden = os.path.join(tmp, "program")
        shutil.copy(PROGRAM, hidden)
        for cmd in (["check", hidden], ["list", hidden], ["doctor", hidden]):
            rc, out, err = run(cmd, user=65534)
            check(rc == 2 and err.strip() == "billing-probes: %s: permission denied" % hidden,
                  "as nobody, %s under a 0700 directory: 'permission denied', exit 2 (%d %r)" % (cmd[0], rc, err))
else:
    print("note: the permission case needs root and setpriv; not run")
finish()

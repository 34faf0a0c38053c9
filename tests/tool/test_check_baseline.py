"""billing-probes check --save-baseline FILE / --baseline FILE: the probe
contract of a build kept in a file, and a later build held to it.

Programs of the tiny provider "shop" (baseline_program.c, baseline_shop.d)
are compiled here in variants, so each case is one known difference:

- save: the file is the version line, then one line per probe signature,
  sorted, exactly as readelf -n's notes say (types from the argument
  specs); other providers (audit, libc, rtld) left out; the same text from
  a build at -O0 in another directory (no path, address or build id);
- against itself: exit 0, nothing listed; a probe removed, an argument
  widened, one added, a probe with a second signature: exit 1 naming the
  probe on one line each, or exit 0 listing the addition;
- a service linking the shared libbillingprobes.so: the library's probes
  are in the file (the built-in catalogue: provider billing), and the
  running program (a PID) matches it;
- a baseline that is not one (version, malformed lines, duplicates, a
  cut-off last line, not text): exit 2, one line naming the file and line;
- a FILE that cannot be written (no directory, a directory, another
  user's directory, a write failing half-way): exit 2, one line, no file
  or temporary file left and the old file untouched;
- a build whose argument cannot be decoded is refused, never saved.
"""
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402
from tooltest import LIB_HELPERS, check, finish, need_probes, run  # noqa: E402

need_probes()

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "baseline_program.c")
SHOP = os.path.join(HERE, "baseline_shop.d")
SHARED = os.environ["BP_SHARED_PROGRAM"]
CC = os.environ.get("CC") or "cc"
HEADER = "billing-probes baseline 1"


def spec_type(spec):
    """A note's argument spec ("-4@%edx", "8f@%xmm0") as its baseline type."""
    m = re.match(r"(-?)(\d+)(f?)@", spec)
    kind = "float" if m.group(3) else "int" if m.group(1) else "uint"
    return "%s%d" % (kind, 8 * int(m.group(2)))


def expected_text(paths, provider):
    """The baseline of PROVIDER's probes in the files, from readelf -n."""
    lines = set()
    for path in paths:
        for name, sites in bt.sdt_notes(path, provider).items():
            for _, specs in sites:
                lines.add(" ".join(["%s:%s %d" % (provider, name, len(specs))] + [spec_type(s) for s in specs]))
    return "".join(line + "\n" for line in [HEADER] + sorted(lines))


def build(name, *defines, opt="-O2", where=None):
    out = os.path.join(where or work, name)
    r = bt.run([CC, opt, "-o", out, SOURCE] + ["-D" + d for d in defines])
    if r.returncode != 0:
        check(False, "%s compiles baseline_program.c %s: %s" % (CC, " ".join(defines), r.stderr[-300:]))
        finish()
    return out


def save(path, *targets, provider=SHOP, **kw):
    return run(["check"] + list(targets) + ["--save-baseline", path] + (["--provider", provider] if provider else []),
               **kw)


def compare(path, *targets, provider=SHOP):
    return run(["check"] + list(targets) + ["--baseline", path] + (["--provider", provider] if provider else []))


def read(path):
    with open(path) as f:
        return f.read()


def leftovers(directory, keep=()):
    return sorted(set(os.listdir(directory)) - set(keep))


def one_line(rc, out, err, *words):
    """exit 2, nothing on stdout, one line on stderr holding every word."""
    lines = err.splitlines()
    return rc == 2 and not out and len(lines) == 1 and all(w in lines[0] for w in words)


work = tempfile.mkdtemp(prefix="bp-baseline-")
os.chmod(work, 0o755)
try:
    plain = build("plain")
    base = os.path.join(work, "shop.baseline")

    # --- save -----------------------------------------------------------------------
    rc, out, err = save(base, plain)
    text = read(base) if os.path.exists(base) else ""
    want = expected_text([plain], "shop")
    check(rc == 0 and not err and text == want and "shop:pay 3 uint64 int64 int32\n" in text,
          "save: exit 0, the file is readelf's shop probes, sorted, one line each (rc=%d %r)\n%s"
          % (rc, err, text))
    check(len(text.splitlines()) == 4 and "audit" not in text and "libc" not in text and "rtld" not in text,
          "save: 3 probes of shop, no other provider's (audit, libc, rtld)")
    check(re.search(r"\b3 probes of shop saved to .*shop\.baseline$", out.strip()) is not None,
          "save: one line saying what was saved (%r)" % out)
    check(leftovers(work, ["plain", "shop.baseline"]) == [], "save: no temporary file left")

    other_dir = os.path.join(work, "elsewhere")
    os.mkdir(other_dir)
    again = os.path.join(other_dir, "again.baseline")
    rc, out, err = save(again, build("plain-O0", opt="-O0", where=other_dir))
    check(rc == 0 and read(again) == text,
          "save from an -O0 build in another directory: the same text (no path, address or build id)")

    # --- compare --------------------------------------------------------------------
    rc, out, err = compare(base, plain)
    check(rc == 0 and not err and out.count("\n") == 1 and "ok: the 3 probes of the baseline" in out,
          "against itself: exit 0, nothing listed, one verdict line (rc=%d %r %r)" % (rc, out, err))

    cases = [
        ("without-refund", ["WITHOUT_REFUND"], 1,
         ["removed: shop:refund: 2 arguments (uint64, int64)"]),
        ("pay-wide", ["PAY_CODE_WIDE"], 1,
         ["changed: shop:pay: was 3 arguments (uint64, int64, int32), now 3 arguments (uint64, int64, int64)"]),
        ("open-more", ["OPEN_MORE_ARGS"], 1,
         ["changed: shop:order__open: was 2 arguments (uint64, int64), now 3 arguments (uint64, int64, int32)"]),
        ("pay-two-forms", ["PAY_TWO_FORMS"], 1,
         ["changed: shop:pay: was 3 arguments (uint64, int64, int32), now 3 arguments (uint64, int64, int32) "
          "or 3 arguments (uint64, int64, int64)"]),
        ("with-ship", ["WITH_SHIP"], 0,
         ["added: shop:ship: 1 argument (uint64)"]),
        ("all-at-once", ["WITHOUT_REFUND", "PAY_CODE_WIDE", "WITH_SHIP"], 1,
         ["changed: shop:pay: was 3 arguments (uint64, int64, int32), now 3 arguments (uint64, int64, int64)",
          "removed: shop:refund: 2 arguments (uint64, int64)",
          "added: shop:ship: 1 argument (uint64)"]),
    ]
    for name, defines, want_rc, want_lines in cases:
        rc, out, err = compare(base, build(name, *defines))
        lines = out.splitlines()
        check(rc == want_rc and not err and lines[:-1] == sorted(want_lines, key=lambda l: l.split()[1]),
              "%s: exit %d, %s (rc=%d %r %r)" % (name, want_rc, want_lines, rc, out, err))
        verdict = lines[-1] if lines else ""
        check(("ok: the 3 probes" in verdict) if want_rc == 0 else (" against the baseline " in verdict),
              "%s: the verdict line (%r)" % (name, verdict))

    two = os.path.join(work, "two-forms.baseline")
    rc, out, err = save(two, os.path.join(work, "pay-two-forms"))
    check(rc == 0 and read(two).count("shop:pay ") == 2 and "3 probes" in out,
          "save: a probe whose sites disagree has one line per signature (%r)" % read(two))

    # --- a service linking libbillingprobes.so: the library's probes too ------------
    lib_base = os.path.join(work, "shared.baseline")
    rc, out, err = save(lib_base, SHARED, provider=None)
    lib_text = read(lib_base) if rc == 0 else ""
    lib_only = set(bt.sdt_notes(LIB_HELPERS))
    check(rc == 0 and lib_text == expected_text([SHARED, LIB_HELPERS], "billing")
          and lib_only and all("billing:%s " % n in lib_text for n in lib_only) and "/" not in lib_text,
          "shared program: the file holds its probes and libbillingprobes.so's (%s), no path (rc=%d %r)"
          % (" ".join(sorted(lib_only)), rc, err))
    rc, out, err = compare(lib_base, SHARED, provider=None)
    check(rc == 0 and out.count("\n") == 1, "shared program against its own baseline: exit 0 (rc=%d %r)" % (rc, out))
    rc, out, err = compare(lib_base, SHARED, LIB_HELPERS, provider=None)
    check(rc == 0 and out.count("\n") == 1,
          "shared program with the library also as a TARGET: the same probes (rc=%d %r %r)" % (rc, out, err))
    svc = subprocess.Popen([SHARED, "1", "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ready = svc.stdout.readline().strip()
        rc, out, err = compare(lib_base, str(svc.pid), provider=None)
    finally:
        svc.stdin.close()
        svc.wait(timeout=20)
    check(ready == "ready" and rc == 0 and out.count("\n") == 1,
          "the running shared program (a PID: the files it maps) against the file's baseline: exit 0 (rc=%d %r %r)"
          % (rc, out, err))

    # --- baselines that are not one ---------------------------------------------------
    good = "shop:order__open 2 uint64 int64\n"
    malformed = [
        ("empty", b"", 1),
        ("version-2", b"billing-probes baseline 2\n" + good.encode(), 1),
        ("not-a-baseline", b"hello\n", 1),
        ("elf", open(plain, "rb").read()[:200], 1),
        ("header-cut", HEADER.encode(), 1),
        ("count-mismatch", (HEADER + "\n" + good + "shop:pay 3 uint64 int64\n").encode(), 3),
        ("bad-type", (HEADER + "\n" + good + "shop:pay 3 uint64 int64 int33\n").encode(), 3),
        ("no-colon", (HEADER + "\nshop pay 1 uint64\n").encode(), 2),
        ("double-space", (HEADER + "\nshop:pay  1 uint64\n").encode(), 2),
        ("trailing-space", (HEADER + "\nshop:pay 1 uint64 \n").encode(), 2),
        ("too-many", (HEADER + "\nshop:pay 13" + " uint64" * 13 + "\n").encode(), 2),
        ("leading-zero", (HEADER + "\nshop:pay 01 uint64\n").encode(), 2),
        ("crlf", (HEADER + "\nshop:pay 1 uint64\r\n").encode(), 2),
        ("blank", (HEADER + "\n\n" + good).encode(), 2),
        ("bad-name", (HEADER + "\nshop:pay-auth 1 uint64\n").encode(), 2),
        ("duplicate", (HEADER + "\n" + good + "shop:pay 1 uint64\n" + good).encode(), 4),
        ("cut-off", (HEADER + "\n" + good + good.replace("open", "shut")[:-1]).encode(), 3),
    ]
    for name, data, line in malformed:
        path = os.path.join(work, name + ".baseline")
        with open(path, "wb") as f:
            f.write(data)
        rc, out, err = compare(path, plain)
        check(one_line(rc, out, err, path, "line %d:" % line),
              "baseline %s: exit 2, one line naming the file and line %d (rc=%d %r %r)" % (name, line, rc, out, err))
    for name, path, why in (("absent", os.path.join(work, "absent.baseline"), "No such file"),
                            ("a directory", work, "is a directory")):
        rc, out, err = compare(path, plain)
        check(one_line(rc, out, err, path, why), "baseline %s: exit 2, one line (%r)" % (name, err))

    # --- a FILE that cannot be written ---------------------------------------------------
    before = leftovers(work)
    for name, path, why in (("in no directory", os.path.join(work, "absent-dir", "x.baseline"), "No such file"),
                            ("a directory", other_dir, "Is a directory"),
                            ("a directory name", work + "/", "not a file name")):
        rc, out, err = save(path, plain)
        check(one_line(rc, out, err, path, why) and leftovers(work) == before
              and leftovers(other_dir) == ["again.baseline", "plain-O0"],
              "save to %s: exit 2, one line, nothing created (rc=%d %r)" % (name, rc, err))

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (40, 40))

    old = read(base)
    p = subprocess.run([os.environ["BP_TOOL"], "check", plain, "--provider", SHOP, "--save-baseline", base],
                       capture_output=True, text=True, preexec_fn=small_files, timeout=20)
    check(one_line(p.returncode, p.stdout, p.stderr, base, "File too large") and read(base) == old
          and leftovers(work) == before,
          "save failing half-way (a 40-byte file limit): exit 2, one line, the old file untouched, no temporary "
          "file left (rc=%d %r)" % (p.returncode, p.stderr))

    if os.geteuid() == 0:
        uid, _, _ = bt.attacker()
        rc, out, err = save(os.path.join(work, "theirs.baseline"), plain, user=uid)
        check(one_line(rc, out, err, "theirs.baseline", "Permission denied") and leftovers(work) == before,
              "save as another user into a directory only root writes: exit 2, one line (rc=%d %r)" % (rc, err))
    else:
        print("note: not root: the other-user case is not run (CI runs as root)")

    absent_target = os.path.join(work, "absent-program")
    fresh = os.path.join(work, "fresh.baseline")
    rc, out, err = save(fresh, absent_target)
    check(rc == 2 and len(err.splitlines()) == 1 and not os.path.exists(fresh),
          "save from a target that is not there: exit 2, no file written (%r)" % err)

    # --- a build whose signature cannot be known is refused ------------------------------
    blob = bytearray(open(plain, "rb").read())
    at = blob.index(b"\0refund\0") + len(b"\0refund\0")
    check(blob[at:at + 2] == b"8@", "the refund note's first argument is 8@... (%r)" % bytes(blob[at:at + 8]))
    blob[at] = ord("9")
    odd = os.path.join(work, "odd-arg")
    with open(odd, "wb") as f:
        f.write(blob)
    rc, out, err = save(fresh, odd)
    check(one_line(rc, out, err, "shop:refund", "argument 1 cannot be decoded") and not os.path.exists(fresh),
          "save from a build with an undecodable argument: exit 2, one line, no file (%r)" % err)
    rc, out, err = compare(base, odd)
    check(one_line(rc, out, err, "shop:refund", "cannot be decoded"),
          "compare a build with an undecodable argument: exit 2, one line (%r)" % err)
    rc, out, err = save(fresh, plain, provider=bt.PROVIDER_D)
    check(one_line(rc, out, err, "no probe of billing found") and not os.path.exists(fresh),
          "save from a build carrying none of the catalogue's probes: exit 2, no file (%r)" % err)

    # --- usage ------------------------------------------------------------------------------
    for args, why in ((["--baseline", base, "--save-baseline", fresh], "not both"),
                      (["--baseline", base, "--expect", "shop:pay"], "take no --expect"),
                      (["--save-baseline", fresh, "--json"], "take no --expect"),
                      (["--baseline"], "--baseline needs a file"),
                      (["--save-baseline="], "--save-baseline needs a file")):
        rc, out, err = run(["check", plain] + args)
        check(one_line(rc, out, err, why) and not os.path.exists(fresh),
              "check %s: exit 2, one usage line (%r)" % (" ".join(args), err))
finally:
    shutil.rmtree(work, ignore_errors=True)
finish()

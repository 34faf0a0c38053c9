#!/usr/bin/env python3
"""One part of the distros suite on one Debian release, inside its root
(distrostest.py: the roots, and this tree built in one the README's way):

    usage: test_distro.py RELEASE build|trace|exporter|promtool|alerts

- build: the root (built, or renewed when stale; its packages from
  tests/install-deps.sh), the README's build of this tree in it, and the kit
  installed as a user installs it (the userpath suite's kit test: `meson
  install`, pkg-config's libdir, a service built against the kit through
  pkg-config), and the public header compiled by that release's gcc and
  clang (-pedantic, C and C++); the root's versions go to the results file;
- trace: every shipped bpftrace script through `billing-probes trace`, exact
  against known books, on the userpath service (a parent and 3 workers, one
  -p, several -p, --binary); and every bpftrace case of the scripts suite on
  its workload, by hand (`bpftrace -p`) and through trace, on that release's
  bpftrace, whose version it prints (tests/scripts/check_figures.py);
- exporter: billing-exporter on the userpath service in USDT mode (--binary,
  --pid) and in stats mode, against its books, through that release's
  Prometheus; the notes' operands read with that release's libbpf (every
  form, both kinds of link, two modules, semaphores); exemplars beside
  native buckets in that release's Prometheus;
- promtool: that release's promtool on every rules file (check rules, test
  rules, the fleet's configs);
- alerts: the shipped alerts end to end on that release's Prometheus and
  Alertmanager (tests/monitoring/test_alerts_end_to_end.py).
The other suites' tests run inside the root through meson test, with their
own checks (each failed check is printed); a skip there is a failure here:
the root is made to have what they need.  Each part's outcome goes to the
results file (DISTROS_RESULTS)."""
import json
import os
import re
import sys
import time

import distrostest as dt
from distrostest import bt

# part: (the tests of the in-root build that make it, how long they may take
# in all, meson's timeout multiplier: userpath-trace-plain, which passes in a
# minute, waits 120 s for each figure a crashing script never prints)
PARTS = {
    "build": (["userpath-kit", "header-compile"], 1800, 1),
    "trace": (["userpath-trace-plain"], 1800, 0.25),
    "exporter": (["userpath-exporter-usdt", "userpath-exporter-stats", "exporter-usdt-args", "exporter-arg-forms",
                  "exporter-two-modules", "exporter-semaphores", "exporter-exemplars-native"], 1800, 1),
    "promtool": (["monitoring-rules", "fleet-configs"], 600, 1),
    "alerts": (["monitoring-alerts-end-to-end"], 1200, 1),
}


def meson_tests(release, root, work, part):
    """The PART's tests of the in-root build, run there; names of those that
    did not pass."""
    names, timeout, multiplier = PARTS[part]
    logbase = "testlog-distros-" + part
    rc, out = dt.run_inside(root, "cd %s && meson test -C build --no-rebuild --print-errorlogs --num-processes 2 "
                            "--timeout-multiplier %s --logbase %s %s" % (dt.in_work(work), multiplier, logbase, " ".join(names)),
                            work, timeout=timeout)
    results = {}
    try:
        with open(os.path.join(work, "build", "meson-logs", logbase + ".json")) as f:
            for line in f:
                r = json.loads(line)
                results[re.split(r"[:/ ]", r["name"])[-1]] = (r["result"], r.get("stdout", ""))
    except OSError:
        pass
    failed = []
    for name in names:
        result, text = results.get(name, ("NOT RUN", "meson test exited %d" % rc))
        why = ""
        if result == "SKIP":
            why = ": " + next((l for l in text.splitlines() if l.startswith("SKIP")), "skipped")
        elif result != "OK":
            fails = [l[5:] for l in text.splitlines() if l.startswith("FAIL ")]
            why = ": %d check(s) failed, the first: %s" % (len(fails), fails[0][:600]) if fails else ""
        if not bt.check(result == "OK", "%s: %s inside the %s root: %s%s" % (release, name, release, result, why)):
            failed.append(name)
    return failed


CASE_LINE = re.compile(r"^(PASS|FAIL|SKIP) (\S+) +(bpftrace -p|trace)\b ?(.*)$")


def script_cases(release, root, work):
    """Every bpftrace case of the scripts suite on the root's bpftrace, by hand
    (`bpftrace -p`) and through the kit's `billing-probes trace`
    (tests/scripts/check_figures.py, two cases at a time): (case runs, names of
    those that did not pass).  Each failure's output is printed from the log."""
    log = os.path.join(work, "check-figures.log")
    rc, out = dt.run_inside(root, "cd %s/build && python3 %s/tests/scripts/check_figures.py --bpftrace "
                            "\"$(command -v bpftrace)\" --workload tests/scripts/scripts-workload --tool "
                            "tools/billing-probes/billing-probes --log %s/check-figures.log"
                            % (dt.in_work(work), dt.IN_SRC, dt.in_work(work)), work, timeout=1800, quiet=True)
    runs, failed = 0, []
    for line in out.splitlines():
        m = CASE_LINE.match(line)
        if line.startswith("bpftrace: "):
            print("%s: the scripts cases on %s" % (release, line[len("bpftrace: "):]))
        if not m:
            continue
        runs += 1
        word, case, how, why = m.groups()
        if not bt.check(word == "PASS", "%s: scripts case %s (%s): %s" % (
                release, case, how, "the expected figures" if word == "PASS" else why.strip()[:600] or word)):
            failed.append("scripts-%s (%s)" % (case, how))
    try:
        text = open(log, errors="replace").read()
    except OSError:
        text = ""
    for name in failed:
        case, how = name[len("scripts-"):-1].split(" (")
        part = re.search(r"^===== %s \(%s\): exit .*?(?=^===== |\Z)" % (re.escape(case), re.escape(how)), text,
                         re.S | re.M)
        print("--- %s: the tail of its output ---\n%s\n---" % (name, part.group(0)[-3000:] if part else "(no log)"))
    if rc != 0 and not failed:
        print(out[-3000:])
        bt.check(False, "%s: check_figures.py exited %d without naming a case" % (release, rc))
        failed.append("check_figures.py")
    return runs, failed


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in dt.RELEASES or sys.argv[2] not in PARTS:
        print("usage: test_distro.py %s %s" % ("|".join(dt.RELEASES), "|".join(PARTS)), file=sys.stderr)
        return 2
    release, part = sys.argv[1:]
    dt.require_suite()
    t0 = time.monotonic()
    try:
        root, work = dt.ready(release)
    except RuntimeError as e:
        bt.check(False, "%s: the root and the README's build in it: %s" % (release, e))
        dt.record(release, part, "FAILED", time.monotonic() - t0, ["the root or the build"], {})
        bt.finish()
    extra = None
    if part == "build":
        v = dt.versions(root, work)
        bt.check(all(v.get(k) for k in ("bpftrace", "libbpf", "gcc", "clang", "prometheus", "alertmanager")),
                 "%s: the root runs %s" % (release, ", ".join("%s %s" % kv for kv in sorted(v.items()))))
        extra = {"versions": v, "root_built": time.strftime("%Y-%m-%d", time.gmtime(dt._built_at(root) or 0))}
    failed = meson_tests(release, root, work, part)
    ran = {"tests": len(PARTS[part][0])}
    if part == "trace":
        ran["scripts cases"], failed_cases = script_cases(release, root, work)
        failed += failed_cases
    dt.record(release, part, "FAILED" if failed else "passed", time.monotonic() - t0, failed, ran, extra)
    bt.finish()


if __name__ == "__main__":
    sys.exit(main())

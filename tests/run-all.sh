#!/bin/bash
# The test command of the README: installs what is needed, builds with
# probes, and runs every test (unit, live bpftrace, tool, fuzz corpus,
# scripts, billingd, stats, security, hardening, install, userpath, fleet,
# style).  Then
# two sanitizer builds:
#   BUILD_DIR-asan  AddressSanitizer + UndefinedBehaviorSanitizer: the unit,
#                   live, tool, billingd, hardening, exporter, stats and
#                   security suites;
#   BUILD_DIR-tsan  ThreadSanitizer: the timing helpers' cross-thread
#                   hand-off (timing), billingd under billing-load
#                   (billingd-ground-truth, billingd-api, hostile clients),
#                   the stats writer and its slow-request trails, and billing-exporter's threads (the
#                   exporter suite and its HTTP security tests).
# A sanitizer report stops the program with a failing status, and is
# written to BUILD_DIR-*/sanitizer-reports: any report there fails the
# phase, whether or not a test read that program's status.  Not run under sanitizers: scripts and install (they test D
# and bpftrace scripts and meson configurations, not our C at run time),
# the fuzz corpus beyond the tool suite, and the benchmarks.
# Last, the distros suite: Debian 13 (trixie) and sid in debootstrap roots
# kept between runs in /var/cache/billing-probes/roots (built on first use,
# renewed when stale), this tree built in each the README's way, and there
# every bpftrace script through trace, the exporter, promtool and the
# alerts on that release's versions (tests/distros; what ran, with which
# versions: BUILD_DIR/tests/distros/results.json).
# Every phase runs even when an earlier one failed; the exit status is 1
# if any did, and the last lines name them.  Run as root on Debian 12, 13
# or sid.
#   bash tests/run-all.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
failed=()

phase() {  # phase NAME COMMAND...: runs it, remembers a failure
  local name=$1
  shift
  local t0=$SECONDS result=passed
  "$@" || result=FAILED
  echo "run-all: $name $result ($((SECONDS - t0)) s)"
  [ $result = passed ] || failed+=("$name")
  times+=("$name" "$result" "$((SECONDS - t0))")
}

# The phases' wall times, for the README's suite figure (docs/figures.py
# reads bench/results/suite-fresh-clone.json, copies of this file)
write_times() {  # write_times FILE
  python3 - "$1" "$(git rev-parse --short HEAD 2>/dev/null || echo none)" "$(nproc)" "${times[@]}" <<'PY'
import json, sys, time
path, commit, cores, rest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
phases = [{"phase": rest[i], "result": rest[i + 1], "s": int(rest[i + 2])} for i in range(0, len(rest), 3)]
json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit, "cores": cores,
           "phases": phases, "total_s": sum(p["s"] for p in phases)}, open(path, "w"), indent=1)
PY
}

setup() {  # setup DIR [meson options...]: the suites in any meson (-Dtests)
  local dir=$1
  shift
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" -Dprobes=enabled -Dtests=enabled "$@"
  else
    meson setup "$dir" -Dprobes=enabled -Dtests=enabled "$@"
  fi
}

plain() {
  # Every optional part enabled: a missing dependency fails the setup
  # instead of silently dropping a suite.
  setup "$build" -Dtool=enabled -Dexamples=enabled -Dexporter=enabled -Dstats=enabled &&
    ninja -C "$build" all meson-test-prereq &&
    meson test -C "$build" --print-errorlogs --num-processes 2 --no-suite distros
}

distros() {
  meson test -C "$build" --print-errorlogs --num-processes 2 --no-rebuild --logbase testlog-distros \
    --suite distros
}

# Sanitizer reports go to files in DIR, and any file there fails the
# phase: a test that kills a program and does not read its exit status
# (a race seen only at shutdown) would otherwise pass over a report.
reports_dir() {  # reports_dir DIR: empties it (in a build tree: meson setup first)
  rm -rf "$1" && mkdir -p "$1"
}
no_reports() {  # no_reports DIR
  if [ -n "$(ls -A "$1")" ]; then
    echo "run-all: sanitizer reports in $1:"
    cat "$1"/*
    return 1
  fi
}

asan() {
  local reports=$PWD/$build-asan/sanitizer-reports rc=0
  setup "$build-asan" -Db_sanitize=address,undefined -Db_lundef=false &&
    ninja -C "$build-asan" all meson-test-prereq && reports_dir "$reports" || return 1
  ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:log_path=$reports/asan \
  UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$reports/ubsan \
    meson test -C "$build-asan" --print-errorlogs --num-processes 2 --no-rebuild \
      --suite unit --suite live --suite tool --suite billingd --suite hardening \
      --suite exporter --suite stats --suite security || rc=1
  no_reports "$reports" || rc=1
  return $rc
}

tally() {  # one closing line over every phase's meson test log; 1 when a
  # test skipped that tests/skips-allowed.txt does not declare (CI has what
  # every test needs: a skip there is a test that did not run)
  python3 - tests/skips-allowed.txt "$build" "$build-asan" "$build-tsan" <<'PY'
import glob, json, os, sys
allowed = {}
for line in open(sys.argv[1]):
    if line.strip() and not line.startswith("#"):
        name, _, reason = line.strip().partition(" ")
        if not reason.strip():
            sys.exit("run-all: %s: %s has no reason" % (sys.argv[1], name))
        allowed[name] = reason.strip()
n = {"OK": 0, "FAIL": 0, "SKIP": 0}
undeclared = set()
for d in sys.argv[2:]:
    for line in (l for log in glob.glob(os.path.join(d, "meson-logs", "testlog*.json")) for l in open(log)):
        t = json.loads(line)
        r = t.get("result", "FAIL")
        n["OK" if r == "OK" else "SKIP" if r == "SKIP" else "FAIL"] += 1
        if r == "SKIP" and t["name"] not in allowed:
            said = (t.get("stdout") or "").strip().splitlines()
            undeclared.add("%s (%s)" % (t["name"], said[-1] if said else "no reason given"))
print("run-all: %d passed, %d failed, %d skipped" % (n["OK"], n["FAIL"], n["SKIP"]))
for name in sorted(undeclared):
    print("run-all: skipped, and not declared in %s: %s" % (sys.argv[1], name))
sys.exit(1 if undeclared else 0)
PY
}

tsan() {
  local reports=$PWD/$build-tsan/sanitizer-reports rc=0
  setup "$build-tsan" -Db_sanitize=thread && ninja -C "$build-tsan" all meson-test-prereq && reports_dir "$reports" || return 1
  export TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=$reports/tsan
  meson test -C "$build-tsan" --print-errorlogs --num-processes 2 --no-rebuild \
    timing billingd-ground-truth billingd-api billingd-shutdown hardening-hostile-clients stats-writer stats-fork stats-label-cache stats-slow-trails \
    security-exporter-slow-clients security-exporter-web-config security-exporter-uid \
    security-exporter-auth-flood security-exporter-connection-classes || rc=1
  meson test -C "$build-tsan" --print-errorlogs --num-processes 2 --no-rebuild --logbase testlog-exporter \
    --suite exporter || rc=1
  unset TSAN_OPTIONS
  no_reports "$reports" || rc=1
  return $rc
}

times=()
phase "install what is needed" bash tests/install-deps.sh
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-all: FAILED: the dependencies could not be installed"
  exit 1
fi
# The Debian 13 and sid roots (tests/distros) before the plain phase: its
# Prometheus 3 tests run the sid root's binary, and the distros phase its kit
phase "Debian 13 and sid roots (built, renewed or checked)" \
  python3 tests/distros/distrostest.py roots "$build-roots"
phase "build and test ($build)" plain
phase "AddressSanitizer + UBSan ($build-asan)" asan
phase "ThreadSanitizer ($build-tsan)" tsan
phase "Debian 13 and sid in roots (distros suite)" distros
tally || failed+=("undeclared skips")
write_times "$build/run-all-times.json"
echo "run-all: phase times in $build/run-all-times.json"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'run-all: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "run-all: all passed"

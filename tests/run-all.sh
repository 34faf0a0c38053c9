#!/bin/bash
# The test command of the README: installs what is needed, builds with
# probes, and runs every test (unit, live bpftrace, tool, fuzz corpus,
# scripts, billingd, hardening, install).  Then two sanitizer builds:
#   BUILD_DIR-asan  AddressSanitizer + UndefinedBehaviorSanitizer: the unit,
#                   live, tool, billingd and hardening suites;
#   BUILD_DIR-tsan  ThreadSanitizer: the timing helpers' cross-thread
#                   hand-off (timing) and billingd under billing-load
#                   (billingd-ground-truth, billingd-api, hostile clients).
# A sanitizer report stops the program with a failing status, so it fails
# its test.  Not run under sanitizers: scripts and install (they test D
# and bpftrace scripts and meson configurations, not our C at run time),
# the fuzz corpus beyond the tool suite, and the benchmarks.
# Run as root on Debian 12.
#   bash tests/run-all.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

setup() {  # setup DIR [meson options...]
  local dir=$1
  shift
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" -Dprobes=enabled "$@"
  else
    meson setup "$dir" -Dprobes=enabled "$@"
  fi
}

bash tests/install-deps.sh
setup "$build"
ninja -C "$build"
meson test -C "$build" --print-errorlogs --num-processes 2

echo "run-all: AddressSanitizer + UndefinedBehaviorSanitizer build ($build-asan)"
setup "$build-asan" -Db_sanitize=address,undefined -Db_lundef=false
ninja -C "$build-asan"
ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1 \
UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
  meson test -C "$build-asan" --print-errorlogs --num-processes 2 --no-rebuild \
    --suite unit --suite live --suite tool --suite billingd --suite hardening

echo "run-all: ThreadSanitizer build ($build-tsan)"
setup "$build-tsan" -Db_sanitize=thread
ninja -C "$build-tsan" tests/unit/test_timing examples/billingd/billingd \
  examples/billing-load/billing-load
TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1 \
  meson test -C "$build-tsan" --print-errorlogs --num-processes 1 --no-rebuild \
    timing billingd-ground-truth billingd-api hardening-hostile-clients

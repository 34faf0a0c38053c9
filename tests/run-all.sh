#!/bin/bash
# The test command of the README: installs what is needed, builds with
# probes, and runs every test (unit, live bpftrace, tool, fuzz corpus,
# scripts, billingd, install).  Run as root on Debian 12.
#   bash tests/run-all.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

bash tests/install-deps.sh
if [ -d "$build" ]; then
  meson setup --reconfigure "$build" -Dprobes=enabled
else
  meson setup "$build" -Dprobes=enabled
fi
ninja -C "$build"
meson test -C "$build" --print-errorlogs --num-processes 2

#!/bin/bash
# Installs what billing-probes needs to build, test, trace and benchmark on
# Debian 12, and makes the kernel's tracing filesystem available.
# Run as root.  Used by tests/run-all.sh (the demo keeps its own list).
set -euo pipefail

packages=(
  # build
  meson ninja-build gcc g++ clang clang-format pkg-config python3 binutils
  # a CMake project against the installed kit (tests/userpath/test_cmake.py, docs/building.md)
  cmake
  # the style suite: every Python file clean under flake8 (pyflakes, pycodestyle)
  flake8 pyflakes3
  # probes: sys/sdt.h and systemtap's dtrace -h/-G wrapper
  systemtap-sdt-dev
  # tests and the billing-probes tool
  libcmocka-dev libelf-dev zlib1g-dev libclang-rt-14-dev
  # tracing
  bpftrace bpftool libbpf-dev
  # other stapsdt consumers (tests/consumers)
  gdb
  # third-party binaries with stapsdt notes the tool must read (tests/tool:
  # postgres built --enable-dtrace, CPython; libstdc++ comes with g++)
  postgresql-15 python3.11
  # a real container runtime for tests/containers (runc: crun refuses hybrid
  # cgroups) and the Debian root it runs
  podman runc debootstrap
  # deploy/kubernetes manifests parsed by tests/containers/test_deploy.py
  python3-yaml
  # examples/billingd and billing-load
  libmicrohttpd-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev wrk procps
  # billing-exporter (clang, bpftool, libbpf-dev, libmicrohttpd-dev above; --web-config:
  # YAML, GnuTLS, bcrypt) and its tests: a real Prometheus server and promtool, openssl
  # for the test certificates; protobuf-c for the protobuf exposition (native histograms)
  libyaml-dev libgnutls28-dev libcrypt-dev openssl protobuf-c-compiler libprotobuf-c-dev
  prometheus
  prometheus-alertmanager
  # benchmarks
  valgrind linux-perf hyperfine
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (apt-get and mounting tracefs need it)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bpftrace attaches uprobes through tracefs; a fresh machine may not mount it.
if [ ! -e /sys/kernel/tracing/uprobe_events ]; then
  mount -t tracefs nodev /sys/kernel/tracing || echo "install-deps.sh: could not mount tracefs; live tests will say why they skip" >&2
fi

# Oracle's DTrace for Linux: the real D compiler (and pid provider) the D
# scripts' tests use.  Built from the source tarball in ../shared; the build
# script is idempotent and exits at once on a working install.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ ! -x /opt/oracle-dtrace/bin/dtrace ]; then
  bash "$root/../shared/oracle-dtrace/build.sh"
fi

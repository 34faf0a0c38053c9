#!/bin/bash
# Installs what billing-probes needs to build, test, trace and benchmark on
# Debian 12 (bookworm), 13 (trixie) and sid, and makes the kernel's tracing
# filesystem available.  Run as root.  Used by tests/run-all.sh and, inside
# each Debian root, by the distros suite (the demo keeps its own list).
#   bash tests/install-deps.sh [PART...]      (default: every part)
#
# Packages are named as every release names them: the unversioned
# postgresql, libclang-rt-dev and libpython3-dev depend on the release's
# own version (15, 14 and 3.11 on bookworm; 17, 19 and 3.13 on trixie).
# Each part is installed by an apt-get of its own, so a package a release
# lacks costs that part alone: a required part then fails the script, an
# optional one is said in one line (the tests that need it skip saying why).
set -euo pipefail

# NAME:required|optional:what needs it:packages
parts=(
  # dpkg-dev: meson asks dpkg-architecture for Debian's multiarch libdir;
  # without it libdir is lib64 and pkg-config does not find the kit's .pc
  "build:required:the build:meson ninja-build gcc g++ clang clang-format pkg-config python3 binutils dpkg-dev"
  # a CMake project against the installed kit (tests/userpath/test_cmake.py, docs/building.md)
  "cmake:optional:userpath-cmake:cmake"
  # every Python file clean under flake8 (pyflakes, pycodestyle)
  "style:required:the style suite:flake8 pyflakes3"
  # sys/sdt.h and systemtap's dtrace -h/-G wrapper
  "probes:required:the probes:systemtap-sdt-dev"
  "tool:required:the billing-probes tool and the unit tests:libcmocka-dev libelf-dev zlib1g-dev"
  "tracing:required:the live tests and the exporter's BPF side:bpftrace bpftool libbpf-dev"
  # examples/billingd and billing-load
  "examples:required:billingd and billing-load:libmicrohttpd-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev wrk procps"
  # billing-exporter (--web-config: YAML, GnuTLS, bcrypt; protobuf-c for the
  # protobuf exposition) and its tests: a real Prometheus, promtool,
  # Alertmanager, openssl for the test certificates, PyYAML for the rules,
  # curl and jq for docs/runbook.md's commands (the alerts' end-to-end test)
  "exporter:required:billing-exporter and its tests:libyaml-dev libgnutls28-dev libcrypt-dev openssl protobuf-c-compiler libprotobuf-c-dev python3-yaml prometheus prometheus-alertmanager curl jq"
  # clang's -fsanitize=fuzzer runtime (tests/fuzz)
  "fuzz:optional:the fuzz targets:libclang-rt-dev"
  # other stapsdt consumers (tests/consumers)
  "consumers:optional:the gdb and perf consumer tests:gdb linux-perf"
  # binaries with stapsdt notes the tool must read (tests/tool/test_third_party.py:
  # postgres built --enable-dtrace, CPython's executable and libpython)
  "third-party:optional:the tool's third-party test:postgresql libpython3-dev"
  # a real container runtime (runc: crun refuses hybrid cgroups) and the
  # Debian root it runs (tests/containers)
  "containers:optional:the container tests:podman runc debootstrap"
  "bench:optional:the benchmarks:valgrind hyperfine"
)

say() { echo "install-deps.sh: $*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (apt-get and mounting tracefs need it)" >&2
  exit 1
fi

wanted=("$@")
for w in "${wanted[@]}"; do
  case " ${parts[*]%%:*} oracle-dtrace " in
    *" $w "*) ;;
    *) echo "install-deps.sh: no part '$w' (parts: ${parts[*]%%:*} oracle-dtrace)" >&2; exit 2 ;;
  esac
done
wants() {  # wants PART: asked for, or every part when none was named
  [ ${#wanted[@]} -eq 0 ] && return 0
  local w
  for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

# (the output read whole: grep -q leaving early would fail the pipe)
installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }
# The release's own package: a candidate in its lists
available() { [[ "$(apt-cache policy "$1" 2>/dev/null)" =~ Candidate:\ [^\(] ]]; }

release=$(. /etc/os-release && echo "${PRETTY_NAME:-unknown}")
export DEBIAN_FRONTEND=noninteractive
updated=0
failed=()
for part in "${parts[@]}"; do
  IFS=: read -r name need what pkgs <<<"$part"
  wants "$name" || continue
  missing=()
  for p in $pkgs; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || continue
  if [ $updated -eq 0 ]; then
    apt-get update -qq || say "apt-get update failed: installing from the package lists at hand"
    updated=1
  fi
  absent=()
  for p in "${missing[@]}"; do available "$p" || absent+=("$p"); done
  if [ ${#absent[@]} -eq 0 ]; then
    say "installing ($name) ${missing[*]}"
    if apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
      continue
    fi
    why="apt-get install ${missing[*]} failed"
  else
    why="$release has no package ${absent[*]}"
  fi
  if [ "$need" = required ]; then
    say "FAILED: part $name ($what): $why" >&2
    failed+=("$name")
  else
    say "optional part $name not installed: $why ($what skip, saying why)"
  fi
done

# bpftrace attaches uprobes through tracefs; a fresh machine may not mount it.
if [ ! -e /sys/kernel/tracing/uprobe_events ]; then
  mount -t tracefs nodev /sys/kernel/tracing || say "could not mount tracefs; live tests will say why they skip" >&2
fi

# Oracle's DTrace for Linux: the real D compiler (and pid provider) the D
# scripts' tests use, built from its kit (the dtrace-utils source and its
# build script, which is idempotent and exits at once on a working
# install): $BILLING_ORACLE_DTRACE_KIT, or oracle-dtrace in the shared
# folder beside the clone (CI's layout).  A clone alone has no kit.
if wants oracle-dtrace && [ ! -x /opt/oracle-dtrace/bin/dtrace ]; then
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  kit=$(realpath -m "${BILLING_ORACLE_DTRACE_KIT:-$root/../shared/oracle-dtrace}")
  if [ -f "$kit/build.sh" ]; then
    bash "$kit/build.sh" || failed+=(oracle-dtrace)
  else
    say "optional part oracle-dtrace not installed: no kit at $kit (set BILLING_ORACLE_DTRACE_KIT to its folder; the D scripts' Oracle DTrace tests skip, saying why)"
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}" >&2
  exit 1
fi

#!/usr/bin/env bash
# run-demo.sh -- the billing-probes demo, in one command:
#
#     sudo bash examples/demo/run-demo.sh [--duration 30]
#
# On a fresh Debian 12 machine, as root, it installs what it needs, builds
# billing-probes with meson, starts billingd with its embedded defaults,
# drives it with billing-load for --duration seconds, and shows the shipped
# bpftrace scripts (tps, request_latency, biz_metrics) attached to billingd
# live through `billing-probes trace` (billingd links the shared
# libbillingprobes.so, as a user's service does: its probes sit in two
# modules, which trace resolves), and billing-exporter feeding a real Prometheus (URLs printed; the
# totals Prometheus holds are shown beside the books; native histograms and
# exemplars on, as docs/exporter.md recommends: the latency p99 from the
# native buckets beside the classic one).  billingd runs as
# billingd-stats, linked with the stats library (docs/stats.md), and the
# exporter reads its stats segment without root: as nobody, through the
# segment's group.  Its card gateway is slow at times, so a few payments
# run past their handler's slow threshold: the demo shows the latest one's
# exemplar in Prometheus and its trail from `billing-probes slow`, run
# without root too.  Then it stops everything and checks that no process is
# left.
# Without root or bpftrace it still runs the service and the load, and says
# why tracing was skipped.
#
# Options:
#   --duration N     seconds of load (default 30)
#   --rate N         requests per second (default 1000; 0: as fast as possible)
#   --build-dir DIR  meson build directory (default: build-demo in the source tree)
#   --no-install     do not apt-get install anything
#   --no-trace       run without bpftrace even when it could trace
#   --publish        write the slow request shown (exemplar and trail) to
#                    examples/demo/results/slow-request.txt, which
#                    docs/slow-requests.md quotes
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
duration=30
rate=1000
build_dir="$repo/build-demo"
install=1
trace=1
publish=0
# The simulated card gateway's mean latency (exponential, capped at ten
# times the mean): now and then an authorisation takes longer than
# billing.d's slow threshold and leaves a trail.
gateway_ms=80

die() { echo "run-demo: $*" >&2; exit 1; }
if [ -t 1 ]; then
	say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi
problems=0

while [ $# -gt 0 ]; do
	case "$1" in
	--duration) [ $# -ge 2 ] || die "--duration wants a number of seconds"; duration=$2; shift 2 ;;
	--rate) [ $# -ge 2 ] || die "--rate wants a number"; rate=$2; shift 2 ;;
	--build-dir) [ $# -ge 2 ] || die "--build-dir wants a directory"; build_dir=$2; shift 2 ;;
	--no-install) install=0; shift ;;
	--no-trace) trace=0; shift ;;
	--publish) publish=1; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
done
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || die "--duration wants a whole number of seconds, got '$duration'"
[[ "$rate" =~ ^[0-9]+$ ]] || die "--rate wants a whole number, got '$rate'"

# --- everything this script starts is stopped on the way out ---------------
work=$(mktemp -d "${TMPDIR:-/tmp}/billing-demo.XXXXXX")
pids=()
billingd_pid=
cleanup() {
	local pid
	trap - EXIT INT TERM
	for pid in "${pids[@]}"; do
		kill -INT "$pid" 2>/dev/null || true
	done
	[ -n "$billingd_pid" ] && kill -TERM "$billingd_pid" 2>/dev/null || true
	for pid in "${pids[@]}" $billingd_pid; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; echo "run-demo: interrupted"; [ -s "$work/load.out" ] && cat "$work/load.out"; exit 130' INT TERM

# --- 1. install -------------------------------------------------------------
# The build and the demo's own needs; libelf-dev and libcmocka-dev let the
# whole project configure (the billing-probes tool, the unit tests).
packages=(meson ninja-build gcc libc6-dev pkg-config python3 procps systemtap-sdt-dev
          libmicrohttpd-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev
          libelf-dev libcmocka-dev bpftrace clang bpftool libbpf-dev prometheus
          protobuf-c-compiler libprotobuf-c-dev)
if [ "$(id -u)" -eq 0 ] && [ "$install" -eq 1 ] && command -v apt-get >/dev/null; then
	missing=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		say "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get update -q
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
	fi
elif [ "$install" -eq 1 ]; then
	echo "run-demo: not root: installing nothing (needs: ${packages[*]})"
fi
for tool in meson ninja cc pkg-config python3 pgrep; do
	command -v "$tool" >/dev/null || die "$tool is missing: run as root, or install: ${packages[*]}"
done

# --- 2. build ---------------------------------------------------------------
say "building in $build_dir"
if [ ! -f "$build_dir/build.ninja" ]; then
	meson setup "$build_dir" "$repo" -Dexamples=enabled >"$work/meson-setup.log" 2>&1 ||
		{ cat "$work/meson-setup.log"; die "meson setup failed"; }
fi
# The stats path: billingd-stats is billingd linked with the kit's stats
# library, libbillingprobes-stats.so, which every Linux build has (but
# -Dstats=disabled), so the build's own configuration is left as it is.
ninja -C "$build_dir" examples/billingd/billingd-stats examples/billing-load/billing-load >"$work/ninja.log" 2>&1 ||
	{ tail -n 40 "$work/ninja.log"; die "build failed"; }
billingd="$build_dir/examples/billingd/billingd-stats"
load="$build_dir/examples/billing-load/billing-load"
tool="$build_dir/tools/billing-probes/billing-probes"
# a tool run from a build tree finds the shipped scripts through this
export BILLING_PROBES_SCRIPTS="$repo/d-scripts/bpftrace"

# --- 3. billingd --------------------------------------------------------------
say "starting billingd (stats segment in $work/stats)"
# The exporter, not root, reads the segment through its group: nogroup,
# nobody's own, when this runs as root; the user's own otherwise.
chmod 755 "$work"
stats_group=
[ "$(id -u)" -eq 0 ] && stats_group=nogroup
# Each log exists before its reader polls it: the job that opens it may not
# have run yet, and sed on a missing file would end this script (set -e).
: >"$work/billingd.log"
BILLING_STATS_DIR="$work/stats" BILLING_STATS_GROUP="$stats_group" \
	"$billingd" --port 0 --db "$work/billing.db" --gateway-latency-ms "$gateway_ms" >"$work/billingd.log" 2>&1 &
billingd_pid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$work/billingd.log")
	[ -n "$port" ] && break
	kill -0 "$billingd_pid" 2>/dev/null || { cat "$work/billingd.log"; die "billingd exited"; }
	sleep 0.1
done
[ -n "$port" ] || die "billingd did not start listening"
cat "$work/billingd.log"

# --- 4. tracing, when it can be done ------------------------------------------
why_not=
if [ "$trace" -eq 0 ]; then
	why_not="--no-trace was given"
elif [ "$(id -u)" -ne 0 ]; then
	why_not="bpftrace needs root (run: sudo bash examples/demo/run-demo.sh)"
elif ! command -v bpftrace >/dev/null; then
	why_not="bpftrace is not installed (apt-get install bpftrace)"
elif ! ninja -C "$build_dir" tools/billing-probes/billing-probes >>"$work/ninja.log" 2>&1; then
	why_not="billing-probes is not built here (needs libelf-dev; docs/tool.md)"
else
	mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
		why_not="tracefs is not mounted at /sys/kernel/tracing and cannot be"
fi

interval=10
[ "$duration" -lt 20 ] && interval=5
script_args() {
	case "$1" in
	tps) echo "" ;;
	request_latency) echo "100 $interval" ;;
	biz_metrics) echo "$interval" ;;
	esac
}
# Live output of each tracer, its lines prefixed with its name; drops the
# harmless RLIMIT_MEMLOCK warning of bpftrace 0.17 and squeezes blank lines.
prefix_lines() {
	sed -u -e '/RLIMIT_MEMLOCK/d' -e '/^$/N;/^\n$/D' \
		-e "s/^\([^\n]\)/[$1] \1/" -e "s/\n\(.\)/\n[$1] \1/"
}

if [ -z "$why_not" ]; then
	say "attaching the shipped bpftrace scripts to billingd (pid $billingd_pid) with billing-probes trace"
	declare -A tracer_pid
	for name in tps request_latency biz_metrics; do
		log="$work/$name.log"
		: >"$log"
		args=$(script_args "$name")
		echo "[$name] billing-probes trace $name -p $billingd_pid${args:+ -- $args}"
		# shellcheck disable=SC2086 # the arguments are words on purpose
		"$tool" trace "$name" -p "$billingd_pid" -- $args \
			> >(tee "$log" | prefix_lines "$name") 2>&1 &
		pids+=($!)
		tracer_pid[$name]=$!
	done
	# Each script's BEGIN prints its "Tracing ..." line once every probe
	# is attached: the load starts after all three have.
	for name in tps request_latency biz_metrics; do
		for _ in $(seq 600); do
			grep -q '^Tracing' "$work/$name.log" && break
			kill -0 "${tracer_pid[$name]}" 2>/dev/null || break
			sleep 0.1
		done
		grep -q '^Tracing' "$work/$name.log" ||
			{ echo "[$name] did not attach"; problems=$((problems + 1)); }
	done
else
	say "tracing skipped: $why_not"
	echo "billingd and billing-load run anyway; the probes cost two loads each while nobody traces."
fi

# --- 4b. billing-exporter and a Prometheus scraping it ---------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_ok() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$1" 2>/dev/null; }
prom_url=
exporter_why=
if ! ninja -C "$build_dir" tools/billing-exporter/billing-exporter tools/billing-probes/billing-probes >>"$work/ninja.log" 2>&1; then
	exporter_why="billing-exporter is not built here (needs clang, bpftool, libbpf-dev, libmicrohttpd-dev; docs/exporter.md)"
fi
if [ -z "$exporter_why" ]; then
	# Without root: as nobody when this runs as root, else as this user.
	as_user=()
	[ "$(id -u)" -eq 0 ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
	say "starting billing-exporter ${as_user:+as nobody }on billingd's stats segment (no BPF) and Prometheus"
	: >"$work/exporter.log"
	"${as_user[@]}" "$build_dir/tools/billing-exporter/billing-exporter" --stats-dir "$work/stats" \
		--listen 127.0.0.1:0 >"$work/exporter.log" 2>&1 &
	pids+=($!)
	exporter_url=
	for _ in $(seq 300); do
		exporter_url=$(sed -n 's|.*serving \(http://127\.0\.0\.1:[0-9]*\)/metrics.*|\1|p' "$work/exporter.log")
		[ -n "$exporter_url" ] && break
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	cat "$work/exporter.log"
	if [ -z "$exporter_url" ]; then
		echo "[exporter] did not start"; problems=$((problems + 1))
	elif ! command -v prometheus >/dev/null; then
		echo "billing-exporter: $exporter_url/metrics (Prometheus is not installed: apt-get install prometheus)"
	else
		prom_url="http://127.0.0.1:$(free_port)"
		cat >"$work/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$repo/monitoring/rules/billing.rules.yml"]
scrape_configs:
  - job_name: billing-exporter
    static_configs: [{targets: ["${exporter_url#http://}"]}]
YML
		# Both features, as docs/exporter.md recommends: Prometheus scrapes the
		# protobuf exposition, keeps the native buckets and the exemplars.
		prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/prometheus-data" \
			--web.listen-address "${prom_url#http://}" --enable-feature=native-histograms,exemplar-storage \
			>"$work/prometheus.log" 2>&1 &
		pids+=($!)
		for _ in $(seq 300); do http_ok "$prom_url/-/ready" && break; sleep 0.1; done
		if http_ok "$prom_url/-/ready"; then
			echo "billing-exporter: $exporter_url/metrics"
			echo "Prometheus:       $prom_url/graph  (try: sum by (outcome) (rate(billing_payments_total[1m])))"
			echo "                  alerts: $prom_url/alerts; dashboard to import: monitoring/grafana/billing-dashboard.json"
		else
			echo "[prometheus] did not become ready:"; tail -n 5 "$work/prometheus.log"
			problems=$((problems + 1)); prom_url=
		fi
	fi
fi

# --- 5. load ----------------------------------------------------------------
say "billing-load: ${duration}s at $( [ "$rate" -eq 0 ] && echo 'full speed' || echo "$rate requests/s" ), 8 connections"
load_rc=0
"$load" --url "http://127.0.0.1:$port" --duration "$duration" --rate "$rate" --concurrency 8 \
	>"$work/load.out" 2>&1 || load_rc=$?

# What Prometheus holds, read over its HTTP API once it has scraped the end.
if [ -n "$prom_url" ]; then
	sleep 2.5
	say "Prometheus's totals ($prom_url)"
	python3 - "$prom_url" <<'PY' || problems=$((problems + 1))
import json, sys, urllib.parse, urllib.request
def q(expr):
    url = sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    r = json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
    return int(float(r[0]["value"][1])) if r else 0
def q1(expr):
    url = sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    r = json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
    return float(r[0]["value"][1]) if r and r[0]["value"][1] != "NaN" else None
print("Prometheus: %d invoices, %d payments approved, %d declined, %d refunds, %d requests" % (
    q("sum(billing_invoices_total)"), q('sum(billing_payments_total{outcome="approved"})'),
    q('sum(billing_payments_total{outcome="declined"})'), q("sum(billing_refunds_total)"),
    q("sum(billing_requests_total)")))
# The latency's p99 from the native buckets (within 1.1 %) beside the classic ones'.
native = q1("histogram_quantile(0.99, sum(billing_request_duration_seconds))")
classic = q1("histogram_quantile(0.99, sum by (le) (billing_request_duration_seconds_bucket))")
if native is None:
    sys.exit("Prometheus holds no native buckets of billing_request_duration_seconds")
print("Request latency p99: %.4f s from the native buckets, %s s from the classic ones" % (
    native, "%.4f" % classic if classic is not None else "none"))
# The dashboard's probe inventory panel: what each target runs.
url = sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": "billing_exporter_target_build_info"})
for r in json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]:
    m = r["metric"]
    print("Probe inventory: %s runs %s probes (source %s, probe set %s)" % (
        m.get("target"), m.get("probes"), m.get("source"), m.get("probe_set")))
PY
	say "a slow request: its exemplar in Prometheus, its trail from billing-probes slow ${as_user:+as nobody}"
	# The latest exemplar on the latency buckets: the request's ID, its
	# handler and the bucket it fell in.
	python3 - "$prom_url" >"$work/exemplar.txt" <<'PY' || true
import json, sys, time, urllib.parse, urllib.request
url = sys.argv[1] + "/api/v1/query_exemplars?" + urllib.parse.urlencode(
    {"query": "billing_request_duration_seconds_bucket", "start": "%d" % (time.time() - 3600),
     "end": "%d" % (time.time() + 60)})
found = [(float(e["timestamp"]), s["seriesLabels"], e)
         for s in json.load(urllib.request.urlopen(url, timeout=10))["data"] for e in s["exemplars"]]
if found:
    _, series, e = max(found, key=lambda f: f[0])
    print('Exemplar: request %s, handler %s, bucket le="%s" of billing_request_duration_seconds (%.3f s)' % (
        e["labels"]["request_id"], series["handler"], series["le"], float(e["value"])))
PY
	exemplar_id=$(sed -n 's/^Exemplar: request \([0-9]*\),.*/\1/p' "$work/exemplar.txt")
	if [ -z "$exemplar_id" ]; then
		echo "[exemplar] Prometheus holds none: no request ran past its slow threshold"
		problems=$((problems + 1))
	else
		{
			cat "$work/exemplar.txt"
			echo "\$ billing-probes slow --stats-dir \$STATS_DIR   # as $("${as_user[@]}" id -un)"
			"${as_user[@]}" "$tool" slow --stats-dir "$work/stats" 2>&1 |
				awk -v id="$exemplar_id" '/^SLOW REQUEST / { on = ($3 == id) } on'  || true
		} >"$work/slow-request.txt"
		cat "$work/slow-request.txt"
		grep -q "^SLOW REQUEST $exemplar_id " "$work/slow-request.txt" ||
			{ echo "[trail] billing-probes slow has no trail of request $exemplar_id"; problems=$((problems + 1)); }
		if [ "$publish" -eq 1 ]; then
			mkdir -p "$repo/examples/demo/results"
			sed "s|$work/stats|\$STATS_DIR|g" "$work/slow-request.txt" >"$repo/examples/demo/results/slow-request.txt"
			echo "(written to examples/demo/results/slow-request.txt)"
		fi
	fi
elif [ -n "$exporter_why" ]; then
	echo "(billing-exporter skipped: $exporter_why)"
fi

# --- 6. stop, in order: tracers (they print their totals), then billingd ----
if [ ${#pids[@]} -gt 0 ]; then
	say "detaching the tracers (totals follow), billing-exporter and Prometheus"
	for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	sleep 0.5 # let the output filters drain
fi
say "load generator's figures"
cat "$work/load.out"
say "stopping billingd"
kill -TERM "$billingd_pid"
wait "$billingd_pid" || true
tail -n 2 "$work/billingd.log"
billingd_pid=
python3 - "$work/billing.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
n = lambda sql: c.execute(sql).fetchone()[0]
print("the books: %d invoices, %d payments approved, %d declined, %d refunds" % (
    n("SELECT count(*) FROM invoices"),
    n("SELECT count(*) FROM payments WHERE status = 'approved'"),
    n("SELECT count(*) FROM payments WHERE status = 'declined'"),
    n("SELECT count(*) FROM refunds")))
PY

# --- 7. nothing left behind ----------------------------------------------------
sleep 0.2
pgrep -P $$ >"$work/children" || true       # this script's children (pgrep skips itself)
pgrep -f -- "$work/" >>"$work/children" || true  # anything still using the work dir
if [ -s "$work/children" ]; then
	say "processes still running:"
	problems=$((problems + 1))
	xargs -r ps -o pid=,args= -p <"$work/children" || true
else
	say "done: no process left behind (pgrep finds none)"
fi
pids=()
[ -z "$why_not" ] || echo "(tracing was skipped: $why_not)"
[ "$load_rc" -eq 0 ] || echo "run-demo: billing-load exited $load_rc (see its figures above)"
[ "$load_rc" -eq 0 ] && [ "$problems" -eq 0 ] || exit 1

#!/usr/bin/env python3
"""What each generated figure of the pages is, and which results files may be quoted.

docs/write.py writes the figures into the pages: a marker
`<!-- gen:fig NAME -->` holds FIGURES[NAME], written from the files it
names, by the keys of their data (a results file of bench/results, one run
each) or the constants of their source (provider/billing.d's @@ lines, the
alert rules, the demo's slow request, a named constant of the code, a test
or a script: named()).

The results files: the parts of a bench run (`bench/run_bench.py
--publish`, or a part's own --publish); the quick suite's time
(tests/time_suite.py); the README test command's phases from fresh clones,
the fleet test's figures and the distros suite's outcomes (stamped by
`bench/run_bench.py --stamp FILE --as suite|fleet|distros`).

A results file is one run: {"run": STAMP, "data": FIGURES}, STAMP its commit,
date, CPU model, kernel and the paths whose code it measures.  A page may
not quote a figure from a file that is not stamped, that holds another run
inside (a date or a machine of its own), or whose run is older than the
code it measures: a commit after the run's touches one of its paths (git
log).  refusals() names each such file and the pages quoting it.

A figure the code or a test sets with no name for it (a literal argument, a
comment of a rules test) stays plain text and is listed in FROM_SOURCE with
the pattern its source must still hold.
"""
import ast
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RESULTS = "bench/results"
DEMO_SLOW_REQUEST = "examples/demo/results/slow-request.txt"
QUICK = RESULTS + "/suite-quick.json"  # tests/time_suite.py --suite quick
BUILD_TIME = RESULTS + "/build-time.json"  # bench/build_time.py --publish
FLEET = RESULTS + "/fleet.json"  # tests/fleet/test_fleet.py's FLEET_RESULTS, stamped (run_bench.py --stamp)
FRESH_CLONES = RESULTS + "/suite-fresh-clone-*.json"  # tests/run-all.sh's run-all-times.json of a fresh clone, each
DISTROS = RESULTS + "/distros.json"  # tests/distros' results.json, stamped (run_bench.py --stamp --as distros)


def part(name):
    """A published part of a bench run (bench/run_bench.py): its results file."""
    return f"{RESULTS}/{name}.json"


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def run_bench():
    """bench/run_bench.py: it writes the results files and what is rendered from them."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import run_bench as rb
    return rb


class NotOneRun(OSError):
    """A results file that is not {"run": ..., "data": ...}: no figure is written from it."""


class Results:
    """The results files (bench/results/*.json), each one run: {"run": its
    stamp, "data": its figures}; read once each."""

    def __init__(self):
        self.docs = {}

    def doc(self, rel):
        if "*" in rel:
            raise FileNotFoundError(2, "no file", os.path.join(ROOT, rel))
        if rel not in self.docs:
            self.docs[rel] = json.loads(read(rel))
        return self.docs[rel]

    def data(self, rel):
        if "data" not in self.doc(rel):
            raise NotOneRun(2, "not one run", os.path.join(ROOT, rel))
        return self.doc(rel)["data"]

    def run(self, rel):
        return self.doc(rel).get("run") or {}


def expand(sources):
    """The files of a figure's sources, its glob patterns expanded (a
    pattern that matches none stays: a file that cannot be read)."""
    out = []
    for s in sources:
        out += sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, s))) or [s] if "*" in s else [s]
    return out


# --- measured figures: bench/results -------------------------------------------

def traced_ns(traced, site, script):
    """The median ns per fire of a row; KeyError when the run has none (skipped)."""
    for r in traced["rows"]:
        if r["site"] == site and r["script"] == script:
            return r["ns_per_fire"]["median"]
    raise KeyError(f"{site}/{script}")


def untraced_row(untraced, variant):
    return next(r for r in untraced["rows"] if r["variant"] == variant)


def run_of(R, name):
    """'RUN (PART.md)': the run a part's figures come from, linked from docs/."""
    return f"{run_bench().run_line(R.run(part(name)))} ([bench/results/{name}.md](../bench/results/{name}.md))"


def exporter_cost(R):
    ex, traced = R.data(part("exporter")), R.data(part("traced"))
    if "json" not in ex:
        return f"Not measured in the published run, {run_of(R, 'exporter')}: {ex.get('skipped') or ex.get('error')}."
    ratios = sorted(r["exporter_vs_count"] for r in ex["json"]["per_fire"])
    same = R.run(part("exporter")) == dict(R.run(part("traced")), measures=R.run(part("exporter")).get("measures"))
    try:
        alone = (f"costs {traced_ns(traced, 'standard', 'count'):.0f} ns on the standard site and "
                 f"{traced_ns(traced, 'fast', 'count'):.0f} ns on the fast one in "
                 + ("that run" if same else f"the run {run_of(R, 'traced')}"))
    except KeyError:  # the traced part skipped them
        alone = f"was not measured in the run {run_of(R, 'traced')}"
    return "\n".join([
        f"Run: {run_of(R, 'exporter')}.", "", ex["markdown"], "",
        f"A uprobe fire alone (bpftrace `count()`, [bench](../bench/README.md)) {alone}; the exporter's "
        f"program costs {ratios[0]:.2f}–{ratios[-1]:.2f}× a `count()` measured beside it (above)."])


STATS_RUNS = ("stats", "stats-billingd-instructions", "stats-trails", "stats-native")


def stats_cost(R):
    """Each run of the stats part, the run named above its figures."""
    rb, runs = run_bench(), run_bench().load_runs(ROOT)
    o = []
    for name in STATS_RUNS:
        R.data(part(name))  # one run, or no figure
        body = rb.part_body(name, runs)[2:]  # without its heading: the page has its own
        o += [f"Run: {run_of(R, name)}.", ""] + body + [""]
    return "\n".join(o).rstrip("\n")


def stats_reading(R):
    rd = R.data(part("reading"))
    return "\n".join([f"Run: {run_of(R, 'reading')}.", "",
                      rd.get("markdown") or f"Not measured: {rd.get('skipped') or rd.get('error')}."])


def untraced_table(R):
    untraced = R.data(part("untraced"))
    rows = [("standard 1-byte site", "scalar", "compare the semaphore, branch"),
            ("function site, literal and scalar arguments", "function",
             "call and return, the arguments into registers, a load of each string's first byte, and the "
             "callee-saved registers the handler now saves around the calls"),
            ("function site, the guarded arguments (look-ups, a helper call, an `snprintf` behind "
             "`BILLING_ERROR_ENABLED()`)", "function_guarded",
             "the same, plus the work the guard skipped under USDT: `_ENABLED()` is 1, so it always runs")]
    o = [f"Run: {run_of(R, 'untraced')}, {R.run(part('untraced')).get('compiler')}, "
         f"{untraced['sites_per_call']} sites a handler:", "",
         "| site | extra instructions per site | what they are |", "|---|---:|---|"]
    for label, variant, what in rows:
        o.append(f"| {label} | {untraced_row(untraced, variant)['extra_per_site']:.3f} | {what} |")
    return "\n".join(o)


def usdt_traced_range(R):
    traced = R.data(part("traced"))
    return f"{traced_ns(traced, 'fast', 'count') / 1000:.1f}–{traced_ns(traced, 'standard', 'count') / 1000:.1f} µs"


def usdt_untraced_range(R):
    traced = R.data(part("traced"))
    ns = sorted(traced_ns(traced, site, "untraced") for site in ("standard", "fast"))
    return f"{ns[0]:.2f}–{ns[-1]:.2f} ns"


# --- figures the provider declares: provider/billing.d ------------------------

def billing_d_directive(*words):
    """The rest of billing.d's header line "@@WORD WORD ...", split."""
    m = re.search(r"^ \* @@%s (.+)$" % " ".join(words), read("provider/billing.d"), re.M)
    return m.group(1).split()


def duration_buckets(_):
    bounds = [float(b) for b in billing_d_directive("buckets", "duration_ns")]
    ms = [b for b in bounds if b < 1]
    s = [b for b in bounds if b >= 1]

    def fmt(x):
        return f"{x:g}"
    return (", ".join(fmt(b * 1000) for b in ms) + " ms, " + ", ".join(fmt(b) for b in s) + " s")


def amount_buckets(_):
    def power(n):
        digits = len(str(n)) - 1
        lead = n // 10 ** digits
        if n < 10000:
            return str(n)
        sup = str(digits).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
        return ("" if lead == 1 else f"{lead}·") + "10" + sup
    return ", ".join(power(int(b)) for b in billing_d_directive("buckets", "amount_minor"))


def label_bytes(key):
    widths = dict(w.split("=") for w in billing_d_directive("label-bytes"))
    return lambda _: str(int(widths[key]) - 1)


# --- figures a named constant of the code, a test or a script is set to --------

def constant(rel, name):
    """The value of the constant NAME in rel: `#define NAME EXPR` (C: integer
    arithmetic), `NAME = VALUE` (Python, also one name of `A, B = 1, 2`) or
    `NAME=VALUE` (shell).  ValueError when rel defines no such constant."""
    text = read(rel)
    m = re.search(r"^#define %s\s+([^/\n]+)" % re.escape(name), text, re.M)
    if m:
        expr = re.sub(r"(?<=\d)(?:ull|ul|ll|u|l)\b", "", m.group(1).strip(), flags=re.I)
        if re.fullmatch(r"[\d\s()+*<>-]+", expr):
            return eval(expr)  # digits and integer operators only, checked above
        raise ValueError(f"{rel}: {name} is not an integer expression ({m.group(1).strip()})")
    for m in re.finditer(r"^(\w+(?:, \w+)*) ?= ?([^#\n]+)", text, re.M):
        names, values = m.group(1).split(", "), m.group(2).split(",")
        if name in names and len(names) == len(values):
            return ast.literal_eval(values[names.index(name)].strip())
    raise ValueError(f"{rel} defines no constant {name}")


def named(rel, name, fmt):
    """A figure of the constant NAME of rel, as fmt writes its value."""
    return ((rel,), lambda _: fmt(constant(rel, name)))


def minutes(seconds):
    return f"{seconds // 60} minutes"


def ms(n):
    return f"{n // 1000} s" if n % 1000 == 0 else f"{n} ms"


def native_error(series):
    """The relative error bound of a native bucket of billing.d's schema for series: 2^(2^-S) - 1."""
    schema = int(dict(w.split("=") for w in billing_d_directive("native", series)[:1])["schema"])
    return f"{(2 ** (2 ** -schema) - 1) * 100:.1f} %"


# --- the alert table: monitoring/rules/billing.rules.yml ----------------------

def alert_table(_):
    import yaml
    rules = yaml.safe_load(read("monitoring/rules/billing.rules.yml"))
    o = ["| alert | severity | for | fires when (PromQL) |", "|---|---|---|---|"]
    for group in rules["groups"]:
        for r in group["rules"]:
            if "alert" in r:
                expr = " ".join(r["expr"].split()).replace("|", "\\|")
                o.append(f"| `{r['alert']}` | {r['labels']['severity']} | {r.get('for', '0s')} | `{expr}` |")
    return "\n".join(o)


def demo_slow_request(_):
    """The demo's latest slow request: its exemplar and trail (run-demo.sh --publish)."""
    return "```\n" + read(DEMO_SLOW_REQUEST).rstrip("\n") + "\n```"


def fleet_scale(R):
    """The fleet test's figures (tests/fleet/test_fleet.py writes them; bench/results/fleet.json is one run's)."""
    f, run = R.data(FLEET), R.run(FLEET)
    series = sorted(f["series_per_host"].values())
    per_sample = sorted(f["remote_write_bytes_per_sample"].values())

    def mean(xs):
        return sum(xs) / len(xs)

    def per_1000(interval):
        return 1000 * mean(series) * mean(per_sample) / interval
    import yaml
    recipe = yaml.safe_load(read("deploy/fleet/agent.yml"))["global"]["scrape_interval"]
    recipe_s = int(recipe.rstrip("s"))  # the recipe states whole seconds
    return "\n".join([
        f"Run: {run_bench().run_line(run)}, `{run.get('command')}`: {f['hosts']} hosts, billing-load at "
        f"{f['load_requests_per_s_per_host']} requests/s on each.", "",
        "| figure | measured | how |", "|---|---:|---|",
        f"| series per service and host | {series[0]:.0f}–{series[-1]:.0f} | `count by (host)` of every series "
        "at the central Prometheus: one billingd, its exporter, the agent's `up` and `scrape_*` |",
        f"| remote-write bytes per sample | {per_sample[0]:.2f}–{per_sample[-1]:.2f} | each agent's bytes sent over "
        "samples sent, while the stages ran |",
        f"| remote-write bytes/s per 1,000 services, {f['scrape_interval_s']} s scrape (the test's) | "
        f"{per_1000(f['scrape_interval_s']):,.0f} | 1,000 × series × bytes per sample ÷ interval |",
        f"| remote-write bytes/s per 1,000 services, {recipe_s} s scrape (deploy/fleet/agent.yml) | "
        f"{per_1000(recipe_s):,.0f} | the same |",
        f"| scrapes of a {f['cut_s']} s cut at the central Prometheus after it | {f['scrapes_delivered_after_cut']} | "
        "from the agent's WAL |",
        f"| exporter killed → notification at the receiver | {f['exporter_down_to_receiver_s']} s | `for:` and group "
        "wait shortened in the test |"])


def distros_table(R):
    """The distributions and versions the distros suite last ran (tests/distros writes
    BUILD/tests/distros/results.json; bench/results/distros.json is one run's copy, stamped)."""
    d, run = R.data(DISTROS), R.run(DISTROS)
    tools = ("bpftrace", "libbpf", "gcc", "clang", "prometheus", "alertmanager")

    def row(name, v, how):
        return f"| {name} | " + " | ".join(re.sub(r"\+ds\d*$", "", v.get(t) or "?") for t in tools) + f" | {how} |"

    def outcome(part, x):
        if x["result"] == "passed":
            return part
        cases = [f for f in x["failed"] if f.startswith("scripts-")]
        named = [f for f in x["failed"] if not f.startswith("scripts-")]
        ran = x.get("ran", {})
        said = named + ([f"{len(cases)} of {ran.get('scripts cases', '?')} scripts cases"] if cases else [])
        return f"{part} **failed** ({'; '.join(said)})"
    o = [f"The distros suite's last run, {run_bench().run_line(run)}; the first row is the machine itself, "
         "where every other suite runs:", "",
         "| distribution | bpftrace | libbpf | gcc | clang | Prometheus | Alertmanager | what ran, and its outcome |",
         "|---|---|---|---|---|---|---|---|",
         row(f"Debian {d['host']['versions']['debian']} (bookworm)", d["host"]["versions"], "every suite")]
    for rel, name in (("trixie", "Debian 13 (trixie)"), ("sid", "Debian sid")):
        r = d["releases"].get(rel, {})
        v = r.get("versions", {})
        parts = ", ".join(outcome(p, x) for p, x in sorted(r.get("parts", {}).items())) or "not run"
        o.append(row(f"{name}, {v['debian']}" if v.get("debian") else name, v,
                     f"root built {r['root_built']}: {parts}" if r.get("root_built") else parts))
    return "\n".join(o)


def quick_suite_time(R):
    q, run = R.data(QUICK), R.run(QUICK)
    return f"{q['wall_s']:.0f} s for {q['tests']} tests on {run.get('cores')} cores ({run.get('date')})"


def build_time(R):
    b, run = R.data(BUILD_TIME), R.run(BUILD_TIME)
    return (f"{b['total_s']:.0f} s on {run.get('cores')} cores ({b['setup_s']:.0f} s setup, "
            f"{b['build_s']:.0f} s ninja, {b['install_s']:.0f} s install; {run.get('date')})")


def fresh_clone_suite_time(R):
    runs = [(R.run(rel), R.data(rel)) for rel in expand([FRESH_CLONES])]  # none: OSError, "not measured"

    def minutes(secs):
        secs = sorted(secs)
        low, high = f"{secs[0] / 60:.1f}", f"{secs[-1] / 60:.1f}"
        return f"{low} min" if low == high else f"{low}–{high} min"

    def phase(prefix):
        return minutes([p["s"] for _, r in runs for p in r["phases"] if p["phase"].startswith(prefix)])
    days = sorted({run["date"][:10] for run, _ in runs})
    # the distros suite's phase (tests/run-all.sh), in the runs made since it is one
    roots = any(p["phase"].startswith("Debian 13 and sid in") for _, r in runs for p in r["phases"])
    return (f"the build and every test {phase('build and test')}, then ASan+UBSan "
            f"{phase('AddressSanitizer')}" + (", " if roots else " and ") + f"TSan {phase('ThreadSanitizer')}"
            + (f" and Debian 13 and sid in their roots {phase('Debian 13 and sid in')}" if roots else "") +
            f": {minutes(r['total_s'] for _, r in runs)} in all ({len(runs)} run{'s' if len(runs) > 1 else ''}, "
            f"{', '.join(days)})")


# name: (the files it comes from, what writes it from them), inline (a
# phrase) or a block (lines), as its marker stands.  A file under
# bench/results is a run's: a figure from it is refused unless the run is
# stamped, alone in its file, and not older than the code it measures
# (run_problems).
UNTRACED, TRACED, BILLING_D = (part("untraced"),), (part("traced"),), ("provider/billing.d",)
DTRACE_TEST = "tests/function_sites/test_billingd_dtrace.py"
SLOW_TRAILS, SLOW_CLIENTS = "tests/stats/test_slow_trails.py", "tests/security/exporter/test_slow_clients.py"
FIGURES = {
    "untraced-site-instructions": (UNTRACED, lambda R: "%d instructions" % (
        2 * untraced_row(R.data(UNTRACED[0]), "scalar")["semaphore_checks_on_hot_path"]
        // R.data(UNTRACED[0])["sites_per_call"])),
    "untraced-scalar-per-site": (UNTRACED, lambda R: f"{untraced_row(R.data(UNTRACED[0]), 'scalar')['extra_per_site']:.3f}"),
    "untraced-sites": (UNTRACED, lambda R: str(R.data(UNTRACED[0])["sites_per_call"])),
    "usdt-untraced-range": (TRACED, usdt_untraced_range),
    "usdt-traced-range": (TRACED, usdt_traced_range),
    "duration-buckets": (BILLING_D, duration_buckets),
    "amount-buckets": (BILLING_D, amount_buckets),
    "label-bytes": (BILLING_D, label_bytes("default")),
    "label-bytes-currency": (BILLING_D, label_bytes("currency")),
    "label-values": (BILLING_D, lambda _: billing_d_directive("label-values")[0]),
    "label-sets": (BILLING_D, lambda _: f"{int(billing_d_directive('label-sets')[0]):,}"),
    "quick-suite-time": ((QUICK,), quick_suite_time),
    "fresh-clone-suite-time": ((FRESH_CLONES,), fresh_clone_suite_time),
    "build-time": ((BUILD_TIME,), build_time),
    "exporter-cost": ((part("exporter"), part("traced")), exporter_cost),
    "stats-cost": (tuple(part(name) for name in STATS_RUNS), stats_cost),
    "stats-reading": ((part("reading"),), stats_reading),
    "untraced-function-sites": (UNTRACED, untraced_table),
    "alerts": (("monitoring/rules/billing.rules.yml",), alert_table),
    "fleet-scale": ((FLEET,), fleet_scale),
    "demo-slow-request": ((DEMO_SLOW_REQUEST,), demo_slow_request),
    "tested-distributions": ((DISTROS,), distros_table),
    "trail-string-bytes": named("lib/stats_trail.h", "BS_TRAIL_STR", lambda n: f"{n - 1} bytes"),  # NUL included
    "slow-keep": named("lib/stats_settings.h", "BS_DEFAULT_SLOW_KEEP_SECONDS", minutes),
    "trail-record-bytes": named(SLOW_TRAILS, "RECORD_SIZE", lambda n: f"{n:,} bytes"),
    "trail-recent-bytes": named(SLOW_TRAILS, "RECENT_BYTES", lambda n: f"{n:,} bytes"),
    "trail-ring-bytes": named(SLOW_TRAILS, "RING_BYTES", lambda n: f"{n:,} bytes"),
    "demo-duration": named("examples/demo/run-demo.sh", "duration", lambda n: f"{n} s"),
    "demo-rate": named("examples/demo/run-demo.sh", "rate", lambda n: f"{n} requests/s"),
    "slow-clients-gap": named(SLOW_CLIENTS, "GAP", lambda n: f"{n:g} s"),
    "slow-clients-seconds": named(SLOW_CLIENTS, "SECONDS", lambda n: f"{n} s"),
    "trace-attach-wait": named("tools/billing-probes/trace_run.c", "BP_ATTACH_LINE_WAIT_MS", ms),
    "bpftrace-quiet": named("tools/billing-probes/bpftrace_process.h", "BP_BPFTRACE_QUIET_MS", ms),
    "bpftrace-stop": named("tools/billing-probes/bpftrace_process.h", "BP_BPFTRACE_STOP_MS", ms),
    "read-budget": named("tools/stats-reader/stats_read.h", "BS_READ_BUDGET", lambda n: f"{n >> 20} MiB"),
    "segment-settle": named("tools/billing-exporter/stats/stats_targets.c", "BX_SETTLE_S", lambda n: f"{n} s"),
    "idle-detach": named("tools/billing-exporter/targets/program_files.h", "BX_IDLE_DETACH_S", lambda n: f"{n} s"),
    "slow-interval": named("tools/billing-probes/cmd_slow.c", "BP_SLOW_INTERVAL_S", lambda n: f"{n} s"),
    "top-interval": named("tools/billing-probes/cmd_top.c", "BP_TOP_INTERVAL_S", lambda n: f"{n} s"),
    "stale-pause": named("tools/billing-probes/stale_semaphores.c", "BP_STALE_PAUSE_MS", lambda n: f"{n} ms"),
    "script-line-wait": named("tools/billing-probes/trace_run.c", "BP_SCRIPT_LINE_WAIT_MS", ms),
    "fuzz-smoke": named("tests/fuzz/meson.build", "fuzz_smoke_seconds", lambda n: f"{n} s"),
    "slow-clients-answer": named("tests/security/exporter/test_slow_clients.py", "ANSWER_S", lambda n: f"{n:g} s"),
    "native-error-test": named("tests/exporter/test_native_histograms.py", "NATIVE_ERR_MAX",
                               lambda n: f"{100 * n:g} %"),
    "watch-window": named("tests/security/exporter/test_binary_watch_cost.py", "WINDOW", lambda n: f"{n} s"),
    "watch-share": (("tests/security/exporter/test_binary_watch_cost.py",), lambda _: "%g%%" % (
        100 * constant("tests/security/exporter/test_binary_watch_cost.py", "CEILING")
        / (100 * constant("tests/security/exporter/test_binary_watch_cost.py", "WINDOW")))),
    "dtrace-load-time": named(DTRACE_TEST, "LOAD_S", lambda n: f"{n} s"),
    "dtrace-invalid": named(DTRACE_TEST, "INVALID_RATE", lambda n: f"{100 * n:g}%"),
    "dtrace-refunds": named(DTRACE_TEST, "REFUND_RATE", lambda n: f"{100 * n:g}%"),
    "dtrace-declines": named(DTRACE_TEST, "DECLINE_RATE", lambda n: f"{100 * n:g}%"),
    "native-error-duration": (BILLING_D, lambda _: native_error("duration_ns")),
    "native-error-amount": (BILLING_D, lambda _: native_error("amount_minor")),
}

# Figures that state what the code or a test is set to where it names no
# constant (a literal in a call, a comment of a rules test): the page's
# text, and a pattern its source file must still match.  A figure with a
# named constant is a `gen:fig` of FIGURES (named()).
FROM_SOURCE = [
    ("docs/slow-requests.md", "2 %", "monitoring/rules/billing.rules.yml",
     r"# 2 % of a 30-day error budget in 1 hour \(burn rate 14\.4\)"),
    ("docs/slow-requests.md", "5 %", "monitoring/rules/billing.rules.yml",
     r"# 5 % of the budget in 6 hours \(burn rate 6\)"),
    ("docs/slow-requests.md", "11 minutes", "monitoring/tests/billing.rules.test.yml",
     r"firing\s+# after `for: 2m` at 11 min"),
    ("docs/slow-requests.md", "20 minutes", "monitoring/tests/billing.rules.test.yml",
     r"pending from 18 min, firing at 20 min"),
    ("docs/slow-requests.md", "8 minutes", "monitoring/tests/billing.rules.test.yml",
     r"every request is slow for its first 8 minutes"),
    ("docs/slow-requests.md", "40 minutes", "monitoring/tests/billing.rules.test.yml",
     r"firing after `for: 15m` at 40 \(41\) min"),
    ("docs/function-sites.md", "5 minutes", "windows/enable-dtrace.ps1", r"return \$now\.AddMinutes\(5\)"),
    ("docs/function-sites.md", "5 minutes", "windows/enable-dtrace-task.xml", r"<Delay>PT5M</Delay>"),
]

# --- which run each figure comes from, and whether it is current ----------------


def git(*args):
    r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    return r.stdout.rstrip() if r.returncode == 0 else None


def nested_runs(data, at=""):
    """Where data holds a run of its own: a date, a machine, a commit or a run inside."""
    found = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k in ("date", "machine", "commit", "run"):
                found.append(f"{at}/{k} ({json.dumps(v)[:60]})")
            else:
                found += nested_runs(v, f"{at}/{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            found += nested_runs(v, f"{at}[{i}]")
    return found


def problems_of(doc):
    """Why the figures of a results file (doc, as read) may not be quoted:
    it is not stamped with its run, it mixes runs, or its run is older
    than the code it measures (a commit after the run's to a path it
    measures).  A STALE problem begins with that word."""
    run, bad = doc.get("run") if isinstance(doc, dict) else None, []
    if not isinstance(run, dict) or "data" not in doc:
        bad.append("is not one run: no {\"run\": stamp, \"data\": figures} (bench/run_bench.py writes them, "
                   "--stamp stamps another program's)")
        run = {}
    missing = [k for k in run_bench().HEADER_FIELDS if run and not run.get(k)]
    if missing:
        bad.append("its run does not record its " + ", ".join(missing))
    inside = nested_runs(doc.get("data") if run else doc)
    if inside:
        bad.append("mixes runs: another run's stamp inside, at " + "; ".join(inside[:3]))
    commit, measures = run.get("commit"), run.get("measures")
    if commit and measures:
        if git("rev-parse", "--verify", "--quiet", commit + "^{commit}") is None:
            bad.append(f"its commit {commit} is not in this checkout: whether it is current cannot be told")
        elif subprocess.run(["git", "-C", ROOT, "merge-base", "--is-ancestor", commit, "HEAD"]).returncode != 0:
            bad.append(f"its commit {commit} is not an ancestor of this checkout's HEAD")
        else:
            later = git("log", "--format=%h %ad %s", "--date=short", f"{commit}..HEAD", "--", *measures)
            if later:
                lines = later.splitlines()
                bad.append(f"STALE: {len(lines)} commit(s) since its run ({commit}, {run.get('date')}) change what it "
                           f"measures ({', '.join(measures)}), the latest {lines[0][:90]}")
    return bad


_problems = {}


def run_problems(rel):
    """problems_of() the results file rel."""
    if rel not in _problems:
        try:
            _problems[rel] = problems_of(json.loads(read(rel)))
        except (OSError, ValueError) as e:
            _problems[rel] = [f"cannot be read ({e})"]
    return _problems[rel]


def results_files():
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, RESULTS, "*.json")))


def refused(quoted):
    """{results file: (its problems, [(page, figure), ...] quoting it)} of
    every results file quoted ([(page, figure, files)]) that may not be
    quoted, and of every results file that is not one stamped run (quoted
    or not)."""
    out = {}
    for rel, fig, files in quoted:
        for f in files:
            if run_problems(f):
                out.setdefault(f, (run_problems(f), []))[1].append((rel, fig))
    for f in results_files():
        unstamped = [p for p in run_problems(f) if not p.startswith("STALE")]
        if unstamped and f not in out:
            out[f] = (unstamped, [])
    return out


def refusals(quoted):
    """One line per refused results file: its problems and who quotes it."""
    lines = []
    for f, (problems, by) in sorted(refused(quoted).items()):
        pages = {}
        for rel, fig in by:
            pages.setdefault(rel, []).append(fig)
        quoted_by = "; ".join(f"{rel} ({', '.join(figs)})" for rel, figs in pages.items()) or "no page"
        lines.append(f"{f} (quoted by {quoted_by}): " + "; ".join(problems))
    return lines

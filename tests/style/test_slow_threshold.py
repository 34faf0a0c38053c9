"""The SLO rules in monitoring/, the bpftrace scripts and billing.d agree on
what a slow request is: every "le" bound a rule counts
billing_request_duration_seconds_bucket by is billing.d's default
"@@slow-threshold" (which the generator checks is a bucket bound of
duration_ns), the rules' and the dashboard's words for it ("within N ms",
"its N ms latency budget", "over N ms") say the same number, and so do
the default THRESHOLD_MS of request_latency and slow_requests, both twins (the
code's and the header's) and the usage lines d-scripts/README.md gives
them.  A threshold changed in billing.d and not elsewhere (or the reverse)
fails here, naming both.

    test_slow_threshold.py SOURCE_ROOT
"""
import glob
import os
import re
import sys

SOURCE = sys.argv[1]
sys.path.insert(0, os.path.join(SOURCE, "provider"))
from billing_d import ProviderError, parse  # noqa: E402  the reader of billing.d

METRIC = "billing_request_duration_seconds_bucket"


def main():
    try:
        provider = parse(os.path.join(SOURCE, "provider", "billing.d"))
    except ProviderError as e:
        print(f"test_slow_threshold: {e}")
        return 1
    default = provider.metrics.limits.slow_default
    seconds = float(default)
    bounds = {seconds: default}
    wrong, seen = [], 0
    for path in sorted(glob.glob(os.path.join(SOURCE, "monitoring", "rules", "*.yml"))):
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            for le in re.findall(METRIC + r'\{[^}]*\ble="([^"]*)"', line):
                seen += 1
                if le == "+Inf" or float(le) != seconds:
                    wrong.append(f"{os.path.relpath(path, SOURCE)}:{n}: le=\"{le}\"")
    texts = sorted(glob.glob(os.path.join(SOURCE, "monitoring", "rules", "*.yml"))) + sorted(
        glob.glob(os.path.join(SOURCE, "monitoring", "grafana", "*.json")))
    for path in texts:
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            for ms in re.findall(r"\b(?:within|over|its) ([0-9.]+) ms\b", line):
                seen += 1
                if float(ms) / 1000 != seconds:
                    wrong.append(f"{os.path.relpath(path, SOURCE)}:{n}: {ms} ms")
    # both twins: "$1 > 0 ? $1 : N) * 1000000" and "(default N" in the header
    for script in ("bpftrace/request_latency.bt", "bpftrace/slow_requests.bt", "request_latency.d", "slow_requests.d"):
        path = os.path.join(SOURCE, "d-scripts", script)
        rel = os.path.relpath(path, SOURCE)
        text = open(path, encoding="utf-8").read()
        code = re.findall(r"\$1 > 0 \? \$1 : (\d+)\) \* 1000000", text)
        head = re.findall(r"THRESHOLD_MS\s+[^(]*\(default[\s*]+(\d+)", text)
        if not code or not head:
            wrong.append(f"{rel}: no default THRESHOLD_MS found (code {code}, header {head})")
        for ms in code + head:
            seen += 1
            if float(ms) / 1000 != seconds:
                wrong.append(f"{rel}: default THRESHOLD_MS {ms} ms")
    readme = os.path.join(SOURCE, "d-scripts", "README.md")
    for n, line in enumerate(open(readme, encoding="utf-8"), 1):
        for ms in re.findall(r"\.bt[^`]*\[THRESHOLD_MS=(\d+)", line):
            seen += 1
            if float(ms) / 1000 != seconds:
                wrong.append(f"d-scripts/README.md:{n}: THRESHOLD_MS={ms}")
    if wrong:
        print(f"test_slow_threshold: billing.d's default @@slow-threshold in provider/billing.d is "
              f"{bounds[seconds]} s but the SLO rules, the dashboard or the bpftrace scripts say another bound:")
        print("\n".join(wrong))
        return 1
    if not seen:
        print(f"test_slow_threshold: no rule in monitoring/rules counts {METRIC} by le")
        return 1
    print(f"ok: {seen} rule bounds and texts = billing.d's default @@slow-threshold, {bounds[seconds]} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Helpers of the stats tests: run the workload, read segments with the
reader (stats_dump), and know the layout from billing.d itself (the
generator's own reader: provider/billing_d.py), so nothing here restates
a metric."""
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import billingtest as bt  # noqa: E402

sys.path.insert(0, os.path.join(bt.SOURCE_ROOT, "provider"))
import billing_d  # noqa: E402

WORKLOAD = os.environ.get("BS_WORKLOAD", "")
DUMP = os.environ.get("BS_DUMP", "")
PROVIDER = billing_d.parse(os.environ.get("BS_PROVIDER_D", bt.PROVIDER_D))
METRICS = PROVIDER.metrics

# struct bs_header (lib/stats_segment.h), little-endian, naturally aligned.
HEADER = struct.Struct("<8sIIQQIIQIIIIQQQQQQQII32I128I32Q32I")
FIELDS = ("magic layout_version endian generation size pid state start_time nmaps nslots rows_per_map "
          "label_values desc_offset desc_size desc_hash dicts_offset rows_offset slots_offset slot_size "
          "slots_used overflow_used").split()


def require_built():
    for name, path in (("BS_WORKLOAD", WORKLOAD), ("BS_DUMP", DUMP)):
        if not path or not os.path.exists(path):
            bt.skip(f"{name} not built (run through meson test)")


def cells_layout(map_name):
    """{"count": 0, quantity: (first cell, number of buckets)} of a map."""
    feed = next(f for f in METRICS.feeds if f.map_name == map_name)
    out, cell = {"count": 0}, 1
    for q in feed.quantities:
        n = len(METRICS.quantities[q].bounds_raw) + 1
        out[q] = (cell, n)
        cell += 2 + n
    return out


def bucket(quantity, x):
    """The bucket index the writer puts x in (None: not observed)."""
    q = METRICS.quantities[quantity]
    if q.unmeasured_zero and x == 0:
        return None
    return sum(1 for b in q.bounds_raw if x > b)


def run(args, env=None, timeout=600):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([WORKLOAD] + [str(a) for a in args], capture_output=True, text=True,
                          env=e, timeout=timeout)


def segments(stdout):
    """[(pid, path)] from the workload's "segment PID PATH" lines."""
    out = []
    for line in stdout.splitlines():
        parts = line.split(" ", 2)
        if parts[0] == "segment":
            out.append((int(parts[1]), parts[2] if len(parts) > 2 else ""))
    return out


def dump(paths):
    """The reader's view of each path: dicts, or {"error": ...}."""
    p = subprocess.run([DUMP] + list(paths), capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1) or (p.returncode == 1 and "error" not in p.stdout):
        raise RuntimeError(f"stats_dump exited {p.returncode}: {p.stderr.strip()}")
    return [json.loads(l) for l in p.stdout.splitlines()]


def rows(seg, map_name):
    return seg["maps"][map_name]


def u64_signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def header(data):
    return dict(zip(FIELDS, HEADER.unpack_from(data)[:len(FIELDS)]))

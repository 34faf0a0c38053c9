"""Helpers of the stats tests: run the workload, read segments with the
reader (stats_dump), and know the layout from billing.d itself (the
generator's own reader: provider/billing_d.py), so nothing here restates
a metric."""
import json
import os
import re
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
HEADER = struct.Struct("<8sIIQQIIQIIIIQQQQQQQII32I128I32Q32IQQQ")  # struct bs_header, to native_size
FLAGS = struct.Struct("<II")  # then its flags (BS_FLAG_*) and a reserved word
HEADER_BYTES = HEADER.size + FLAGS.size  # sizeof(struct bs_header): what a reader reads first
NATIVE_FIRST = 1  # BS_FLAG_NATIVE_FIRST
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


def native_whole(seg, map_name):
    """Whether every row of map_name in seg holds each observation of each
    native quantity once in its native buckets (stats_dump's "native":
    [in range, out of range] per quantity that has them), as many as its
    classic count; a duration never out of range.  The buckets are shared
    by the process's threads (atomic adds): this is what says none was lost."""
    layout = cells_layout(map_name)
    natives = [q for q in layout if q != "count" and METRICS.quantities[q].native]
    for r in rows(seg, map_name):
        if len(r.get("native", [])) != len(natives):
            return False
        for q, (inside, out) in zip(natives, r["native"]):
            if inside + out != r["cells"][layout[q][0]] or (not METRICS.quantities[q].signed and out):
                return False
    return True


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


# --- another billing.d: a segment as a build from it writes one ----------------------------

NEW_PROBE = """\t/**
\t * coupon-apply: a coupon was applied to an invoice (a team's own probe).
\t * @invoice_id the invoice
\t * @campaign the campaign the coupon belongs to
\t * @@group business
\t * @@counter billing_coupons_applied_total count {campaign}
\t *     Coupons applied, by campaign.
\t */
\tprobe coupon__apply(unsigned long long, char *);

"""
NEW_BOUND = "100000000"  # one more amount_minor bucket, above the others


def variant_provider(directory):
    """A copy of billing.d in directory with one new probe feeding a new
    counter, billing_transaction_amount_minor's quantity with one more
    bucket, and half the label values before "other" (@@label-values); its
    path.  The files billing.d names (known values) come along."""
    src = os.path.dirname(bt.PROVIDER_D)
    text = open(bt.PROVIDER_D, encoding="utf-8").read()
    anchor = "\t/**\n\t * error: "
    bounds = "@@buckets amount_minor "
    line = next(l for l in text.splitlines() if bounds in l)
    if anchor not in text:
        raise RuntimeError("billing.d has no error probe to put the new probe before")
    text = text.replace(anchor, NEW_PROBE + anchor, 1).replace(line, line.rstrip() + " " + NEW_BOUND, 1)
    values = re.search(r"@@label-values (\d+)", text)
    text = text.replace(values.group(0), f"@@label-values {int(values.group(1)) // 2}", 1)
    for name in os.listdir(src):
        if name.endswith(".txt"):
            with open(os.path.join(src, name), "rb") as a, open(os.path.join(directory, name), "wb") as b:
                b.write(a.read())
    path = os.path.join(directory, "billing.d")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & (2 ** 64 - 1)
    return h


def sample_rows(ms, seed):
    """{probe: [(labels, cells)]}: a few label sets per map of metric set
    ms, each with consistent cells (count, and per quantity count, sum and
    buckets whose sum is the count)."""
    out = {}
    for i, f in enumerate(ms.feeds):
        types = {n: t for n, t, _ in f.probe.args}
        rows = []
        for r in range(3):
            labels = []
            for a in f.fields:
                if types[a] != "char *":
                    labels.append(str((seed + r * 7) % 3))
                elif ms.known.get(a):
                    labels.append(ms.known[a][(seed + 5 * r) % len(ms.known[a])])
                else:
                    labels.append(f"{a[:4]}-{seed}-{r}")
            fires = 10 + 3 * i + r + seed
            cells = [fires]
            for q in f.quantities:
                n = len(ms.quantities[q].bounds_raw) + 1
                buckets = [(fires * (b + 1) + seed) % 4 for b in range(n)]
                cells += [sum(buckets), 1000 * fires + seed, *buckets]
            rows.append((labels, cells))
        out[f.probe.d_name] = rows
    return out


def write_segment(path, ms, rows):
    """A segment of one thread slot, as a writer built from metric set ms
    lays it out (lib/stats_writer.c), holding rows ({probe: [(labels, cells)]});
    the description is the generator's own (stats_emit.description)."""
    import stats_emit  # the generator's half: provider/ is on the path
    desc = stats_emit.description(ms).encode()
    feeds = ms.feeds
    nmaps, fields_max, values, entry = len(feeds), 4, ms.limits.label_values, 32
    cells = [1 + sum(3 + len(ms.quantities[q].bounds_raw) for q in f.quantities) for f in feeds]
    nrows = [128 + ms.fold_keys(f) + 1 for f in feeds]
    dicts = (4096 + len(desc) + 1 + 63) // 64 * 64
    rows_off = dicts + nmaps * fields_max * values * entry
    slots_off = (rows_off + sum(nrows) * 4 + 4095) // 4096 * 4096
    slot_size = (64 + sum(n * c for n, c in zip(nrows, cells)) * 8 + 4095) // 4096 * 4096
    native_off = slots_off + slot_size  # no trails' ring; the native buckets (all zero) after the slot
    native_size = sum(n * stats_emit.native_cells(ms, f) * 8 for n, f in zip(nrows, feeds))
    data = bytearray(native_off + native_size)
    data[4096:4096 + len(desc)] = desc
    row_count, dict_count, cell_off = [0] * 32, [0] * 128, [0] * 32
    base_row, base_cell = 0, 0
    for m, f in enumerate(feeds):
        types = {n: t for n, t, _ in f.probe.args}
        cell_off[m] = base_cell * 8
        dict_values = [[] for _ in range(fields_max)]
        for r, (labels, cs) in enumerate(rows.get(f.probe.d_name, [])):
            idx = []
            for k, (a, v) in enumerate(zip(f.fields, labels)):
                known = ms.known.get(a, []) if types[a] == "char *" else []
                if v in known:
                    idx.append(64 + known.index(v))
                    continue
                raw = v.encode() if types[a] == "char *" else struct.pack("<i", int(v))
                if raw not in dict_values[k]:
                    dict_values[k].append(raw)
                idx.append(dict_values[k].index(raw))
            data[rows_off + (base_row + r) * 4:rows_off + (base_row + r) * 4 + 4] = bytes(idx + [0] * (4 - len(idx)))
            at = slots_off + 64 + (base_cell + r * cells[m]) * 8
            struct.pack_into(f"<{cells[m]}Q", data, at, *[c % 2 ** 64 for c in cs])
            row_count[m] = r + 1
        for k, vs in enumerate(dict_values):
            for i, raw in enumerate(vs):
                at = dicts + ((m * fields_max + k) * values + i) * entry
                data[at:at + len(raw)] = raw
            dict_count[m * fields_max + k] = len(vs)
        base_row += nrows[m]
        base_cell += nrows[m] * cells[m]
    head = [b"BILLSTAT", 5, 0x01020304, fnv1a(path.encode()) | 1, len(data), os.getpid(), 2, 0, nmaps, 1, 128,
            values, 4096, len(desc) + 1, fnv1a(desc), dicts, rows_off, slots_off, slot_size, 1, 0]
    HEADER.pack_into(data, 0, *head, *row_count, *dict_count, *cell_off, *(cells + [0] * (32 - nmaps)), 0,
                     native_off if native_size else 0, native_size)
    FLAGS.pack_into(data, HEADER.size, NATIVE_FIRST, 0)
    with open(path, "wb") as f:
        f.write(data)

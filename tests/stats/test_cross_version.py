#!/usr/bin/env python3
"""The reader decodes each segment by its own description, whatever
billing.d its writer was built from.  Two segments are written the way a
writer lays them out (statstest.write_segment, with the generator's own
description): one from this tree's billing.d, one from a copy with a new
probe feeding a new counter (billing_coupons_applied_total), one more
amount_minor bucket (billing_transaction_amount_minor, in three maps) and
half the label values before "other" (@@label-values: its dictionaries
smaller, what follows them elsewhere).
This build's reader (stats_dump) must give back every row of both exactly,
by the segment's own maps (labels, cells at their shifted places, the new
map), name the new segment's families, show this build's maps only where
the segment holds them in this build's shape (never a changed map through
this build's tables), and refuse hostile descriptions with one line, each
after reading no more than the header and its description."""
import os
import sys
import tempfile

import statstest as st
from statstest import bt

sys.path.insert(0, os.path.join(st.HERE, "..", "exporter"))
import exportertest as et  # noqa: E402

st.require_built()
EXPORTER = os.environ.get("BX_EXPORTER", "")


def check(cond, what, detail=""):
    bt.check(cond, what if cond or not detail else f"{what}: {str(detail)[:600]}")


def value_cell(ms, probe, quantity):
    """The first cell (its count) of a quantity in a map's row."""
    feed = next(f for f in ms.feeds if f.probe.d_name == probe)
    cell = 1
    for q in feed.quantities:
        if q == quantity:
            return cell
        cell += 3 + len(ms.quantities[q].bounds_raw)
    raise KeyError(quantity)


def described_rows(seg, map_name):
    return [(r["labels"], r["cells"]) for r in seg["described"][map_name]["rows"]]


def check_exact(seg, ms, rows, what):
    for f in ms.feeds:
        got = described_rows(seg, f.map_name)
        want = [(labels, cells) for labels, cells in rows[f.probe.d_name]]
        check(got == want, f"{what}: map {f.map_name}: its {len(want)} rows read back exactly by its description",
              f"got {got}, want {want}")


with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
    old_ms, new_ms = st.METRICS, st.billing_d.parse(st.variant_provider(tmp)).metrics
    old_rows, new_rows = st.sample_rows(old_ms, 1), st.sample_rows(new_ms, 2)
    old_path, new_path = os.path.join(tmp, "old.stats"), os.path.join(tmp, "new.stats")
    st.write_segment(old_path, old_ms, old_rows)
    st.write_segment(new_path, new_ms, new_rows)
    old, new = st.dump([old_path, new_path])
    check("error" not in old, "a segment of this build's billing.d reads", old.get("error"))
    check("error" not in new, "a segment of another billing.d reads", new.get("error"))
    if "error" in old or "error" in new:
        bt.finish()

    check_exact(old, old_ms, old_rows, "this billing.d")
    check_exact(new, new_ms, new_rows, "the other billing.d")
    for f in old_ms.feeds:  # this build's maps, through this build's tables
        want = [cells + [0] * (len(old["maps"][f.map_name][0]["cells"]) - len(cells))
                for _, cells in old_rows[f.probe.d_name]]
        got = [r["cells"] for r in old["maps"][f.map_name]]
        check(got == want, f"this billing.d: this build's map {f.map_name} is the segment's", f"{got} vs {want}")

    families = {(x["name"], x["map"]) for x in new["families"]}
    check(("billing_coupons_applied_total", "m_coupon_apply") in families,
          "the new counter is among the other segment's families, fed by its new probe")
    check(len(new["families"]) == len(new_ms.metrics), "every family entry of the other billing.d is described",
          f"{len(new['families'])} vs {len(new_ms.metrics)}")
    changed = {f.probe.d_name for f in new_ms.feeds if "amount_minor" in f.quantities} | {"coupon__apply"}
    for f in new_ms.feeds:
        build = new["described"][f.map_name]["build_map"]
        if f.probe.d_name in changed:
            check(build == -1 and not new["maps"].get(f.map_name),
                  f"the other billing.d: map {f.map_name} (new, or other buckets) has no rows as this build's map")
        else:
            got = [r["cells"][:len(c)] for r, (_, c) in zip(new["maps"][f.map_name], new_rows[f.probe.d_name])]
            check(build >= 0 and got == [c for _, c in new_rows[f.probe.d_name]],
                  f"the other billing.d: map {f.map_name}, the same shape, is this build's map too")

    # Hostile descriptions: one line each, nothing read past the description.
    data = open(new_path, "rb").read()
    head = st.header(data)
    desc = data[head["desc_offset"]:head["desc_offset"] + head["desc_size"] - 1]
    cases = {
        "an unknown kind of line": desc + b"bogus line\n",
        "a map's cells that its values do not take": desc.replace(b"cells=1 folds=", b"cells=2 folds=", 1),
        "bounds out of order": desc.replace(b"le=100,500,", b"le=500,100,", 1),
        "a label naming no field": desc.replace(b"label campaign value campaign", b"label campaign value nope", 1),
        "a control byte": desc.replace(b"Coupons applied", b"Coupons\x1bapplied", 1),
        "another grammar": desc.replace(b"description 5", b"description 6", 1),
        "native buckets past the bound": desc.replace(b"native=6,-20,7", b"native=8,-20,7", 1),
        "a family twice, differently": desc + b"family billing_errors_total histogram observe - -\n",
        "70,000 bytes": desc + b"known pad " + b"A," * 35000 + b"\n",
    }
    for what, text in cases.items():
        path = os.path.join(tmp, "hostile.stats")
        body = bytearray(data)  # the text over its old place (and beyond: a refusal reads no further)
        end = head["desc_offset"] + len(text) + 1
        body[head["desc_offset"]:end] = text + b"\0"
        put = dict(zip(st.FIELDS, st.HEADER.unpack_from(body)[:len(st.FIELDS)]),
                   desc_size=len(text) + 1, desc_hash=st.fnv1a(text), size=len(body))
        st.HEADER.pack_into(body, 0, *[put[k] for k in st.FIELDS], *st.HEADER.unpack_from(body)[len(st.FIELDS):])
        with open(path, "wb") as f:
            f.write(body)
        seg = st.dump([path])[0]
        err = seg.get("error", "")
        read = seg.get("work", {}).get("bytes", 0)
        check(err and "\n" not in err and read <= st.HEADER_BYTES + min(len(text) + 1, 65537),
              f"a description with {what}: refused in one line, after {read} bytes", err or "read")

    # The exporter beside both: the maps of this build's shape summed over
    # the two segments, the others served from the old segment alone, one
    # line for the new one.
    if not EXPORTER or not os.path.exists(EXPORTER):
        print("the exporter part not run: BX_EXPORTER not built (-Dexporter)")
        bt.finish()
    d = os.path.join(tmp, "dir")
    os.mkdir(d, 0o700)
    for name, ms, rows in (("1001.stats", old_ms, old_rows), ("1002.stats", new_ms, new_rows)):
        st.write_segment(os.path.join(d, name), ms, rows)
    # a third, whose description says the new counter with another help: not summed with the second's
    third = bytearray(open(os.path.join(d, "1002.stats"), "rb").read())
    h3 = st.header(third)
    text = bytes(third[h3["desc_offset"]:h3["desc_offset"] + h3["desc_size"] - 1])
    other = text.replace(b"Coupons applied, by campaign.", b"Coupons applied; by campaign.")
    third[h3["desc_offset"]:h3["desc_offset"] + len(other)] = other
    h3["desc_hash"] = st.fnv1a(other)
    st.HEADER.pack_into(third, 0, *[h3[k] for k in st.FIELDS], *st.HEADER.unpack_from(third)[len(st.FIELDS):])
    with open(os.path.join(d, "1003.stats"), "wb") as f:
        f.write(third)
    ex = et.Exporter(EXPORTER, "--stats-dir", d, "--metrics", "all", timeout=120)
    try:
        samples = ex.samples()
        _, text = ex.metrics()
        os.remove(os.path.join(d, "1002.stats"))  # its process gone: what it counted stays served
        after = ex.samples()
    finally:
        _, log = ex.stop()
    for m in old_ms.metrics:
        if m.source != "count" or m.where:
            continue
        fed = [f for f in old_ms.feeds if f.probe is m.probe][0]
        want = sum(c[0] for _, c in old_rows[fed.probe.d_name]) + 2 * sum(c[0] for _, c in new_rows[fed.probe.d_name])
        got = et.total(samples, m.name)
        shape = "another shape there" if fed.probe.d_name in changed else "the same shape"
        check(got == want, f"{m.name}: {got:.0f} served, the three segments' summed (its map: {shape})",
              f"want {want}")
    amount = "billing_payment_amount_minor_total"  # a sum of the quantity with one more bucket
    want = sum(c[value_cell(old_ms, "payment__auth", "amount_minor") + 1] for _, c in old_rows["payment__auth"])
    want += 2 * sum(c[value_cell(new_ms, "payment__auth", "amount_minor") + 1] for _, c in new_rows["payment__auth"])
    got = et.total(samples, amount)
    check(got == want, f"{amount} (a sum of that quantity): {got:.0f}, the three segments' summed", f"want {want}")
    dur = "billing_payment_auth_duration_seconds"  # a histogram of an unchanged quantity in a changed map
    want = sum(c[value_cell(old_ms, "payment__auth", "duration_ns")] for _, c in old_rows["payment__auth"])
    want += 2 * sum(c[value_cell(new_ms, "payment__auth", "duration_ns")] for _, c in new_rows["payment__auth"])
    got = et.total(samples, dur + "_count")
    check(got == want, f"{dur} (unchanged buckets, in a changed map): {got:.0f} observations, the three segments' "
          "summed", f"want {want}")
    hist = "billing_transaction_amount_minor"
    count = et.total(samples, hist + "_count")
    old_count = sum(c[st.cells_layout(f.map_name)["amount_minor"][0]] for f in old_ms.feeds
                    if "amount_minor" in f.quantities for _, c in old_rows[f.probe.d_name])
    check(count == old_count, f"{hist} (one more bucket in the new billing.d): {count:.0f} observations served, "
          "the old segment's alone", f"want {old_count}")
    coupons = sum(c[0] for _, c in new_rows["coupon__apply"])
    got = et.total(samples, "billing_coupons_applied_total")
    check(got == coupons, f"the new counter, which this exporter was not built with: {got:.0f} served, the first "
          "new segment's", f"want {coupons}")
    check("# HELP billing_coupons_applied_total Coupons applied, by campaign.\n"
          "# TYPE billing_coupons_applied_total counter\n" in text, "... with its help and type from the description")
    gone = ("billing_coupons_applied_total", "billing_payments_total", "billing_payment_auth_duration_seconds_count")
    check(all(et.total(after, n) == et.total(samples, n) for n in gone),
          "the new segment's file removed: its families stay as they were (" + ", ".join(gone) + ")",
          {n: (et.total(samples, n), et.total(after, n)) for n in gone})
    per_campaign = {labels[0]: c[0] for labels, c in new_rows["coupon__apply"]}
    check(all(et.total(samples, "billing_coupons_applied_total", campaign=k) == v for k, v in per_campaign.items()),
          f"... per campaign label: {per_campaign}")
    conflict = [line for line in log.splitlines() if "1003.stats" in line and "billing_coupons_applied_total" in line]
    check(len(conflict) == 1, "the third segment's other description of it: one line, not summed", conflict or log[-600:])
    said = [line for line in log.splitlines() if "1002.stats" in line and "not served" in line]
    check(len(said) == 1 and hist + " " in said[0],
          f"the new segment's {hist} (fed by 3 of its maps): one line", said or log[-600:])
bt.finish()

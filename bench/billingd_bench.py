"""Part 4 of the benchmark: billingd end to end (placeholder)."""


def part4(build_dir, source_dir, reps, duration, skip):
    return {"rows": [], "skipped": "billingd / billing-load not available"}


def markdown(p4):
    return ["### 4. billingd end to end", "", p4.get("skipped", ""), ""]

"""The reader of provider/billing.d: its probes, their arguments and doc
comments (the "@@" metric lines go to metrics.py), and the NAME-start /
NAME-done pairs the timing helpers measure.  generate.py and its emitters
work from what parse() returns.
"""

import re

import metrics

# D base type -> (C type in the public API, catalogue type name)
TYPES = {
    "unsigned long long": ("uint64_t", "uint64"),
    "long long": ("int64_t", "int64"),
    "int": ("int32_t", "int32"),
    "char *": ("const char *", "string"),
}

MAX_ARGS = 6  # bpftrace reads arg0..arg5 of a USDT probe on x86-64


class ProviderError(Exception):
    pass


class Provider:
    def __init__(self, path, name, probes):
        self.path = path        # provider/billing.d as given
        self.name = name        # billing
        self.probes = probes    # [Probe] in billing.d's order


class Probe:
    def __init__(self, d_name, summary, args):
        self.d_name = d_name                        # request__start
        self.name = d_name.replace("__", "-")        # request-start
        self.macro = d_name.replace("__", "_").upper()  # REQUEST_START
        self.func = d_name.replace("__", "_")        # request_start
        self.summary = summary                      # "a request handler begins ..."
        self.args = args                            # [(name, d_type, doc)]
        self.metric_lines = []                      # its "@@" doc lines (metrics.py)


def parse(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"\bprovider\s+([A-Za-z_]\w*)\s*\{(.*?)\n\};", text, re.S)
    if not m:
        raise ProviderError(f"{path}: no 'provider NAME {{ ... }};' block")
    provider, body = m.group(1), m.group(2)
    probes = []
    pattern = re.compile(r"/\*\*(.*?)\*/\s*probe\s+(\w+)\s*\(([^)]*)\)\s*;", re.S)
    for doc, d_name, params in pattern.findall(body):
        lines = [re.sub(r"^\s*\*\s?", "", l).strip() for l in doc.strip().splitlines()]
        lines = [l for l in lines if l]
        name = d_name.replace("__", "-")
        head = re.match(r"([\w-]+):\s*(.+)", lines[0]) if lines else None
        if not head or head.group(1) != name:
            raise ProviderError(f"{path}: probe {name}: doc comment must start with '{name}: ...'")
        arg_docs = []
        # "@@" lines and the help text under them: the metrics the probe
        # feeds (provider/metrics.py reads them).
        first_metric = next((i for i, l in enumerate(lines) if l.startswith("@@")), len(lines))
        metric_lines = lines[first_metric:]
        for l in lines[1:first_metric]:
            am = re.match(r"@(\w+)\s+(.+)", l)
            if not am:
                raise ProviderError(f"{path}: probe {name}: unexpected doc line {l!r}")
            arg_docs.append((am.group(1), am.group(2)))
        types = [t.strip() for t in params.split(",")] if params.strip() else []
        for t in types:
            if re.sub(r"\s+", " ", t) not in TYPES:
                raise ProviderError(f"{path}: probe {name}: type {t!r} is not one of {sorted(TYPES)}")
        if len(types) != len(arg_docs):
            raise ProviderError(f"{path}: probe {name}: {len(types)} arguments but {len(arg_docs)} @arg lines")
        if len(types) > MAX_ARGS:
            raise ProviderError(f"{path}: probe {name}: {len(types)} arguments, at most {MAX_ARGS}")
        args = [(an, re.sub(r"\s+", " ", t), ad) for (an, ad), t in zip(arg_docs, types)]
        probes.append(Probe(d_name, head.group(2), args))
        probes[-1].metric_lines = metric_lines
    declared = re.findall(r"\bprobe\s+(\w+)\s*\(", body)
    if len(declared) != len(probes):
        documented = {p.d_name for p in probes}
        missing = [d for d in declared if d not in documented]
        raise ProviderError(f"{path}: probes without a doc comment: {', '.join(missing)}")
    if not probes:
        raise ProviderError(f"{path}: provider {provider} declares no probes")
    try:
        spans(probes)  # every output agrees on what a start/done pair is
    except ProviderError as e:
        raise ProviderError(f"{path}: {e}") from None
    result = Provider(path, provider, probes)
    try:
        result.metrics = metrics.parse(result, text)
    except metrics.MetricError as e:
        raise ProviderError(str(e)) from None
    return result


class Span:
    """A NAME__start / NAME__done pair, measured by the timing helpers
    billing_NAME_begin() and billing_NAME_end().

    kept: done's arguments that start also has (stored by begin);
    extra: done's other arguments but the last, duration_ns (given to end)."""

    def __init__(self, start, done):
        if not done.args or done.args[-1][0] != "duration_ns":
            raise ProviderError(f"probe {done.name}: the last argument of a -done probe must be duration_ns")
        self.start, self.done = start, done
        self.base = start.func[:-len("_start")]  # request_start -> request
        start_names = {n for n, _, _ in start.args}
        self.kept = [a for a in done.args[:-1] if a[0] in start_names]
        self.extra = [a for a in done.args[:-1] if a[0] not in start_names]

    def begin_params(self):
        return ", ".join([f"billing_{self.base}_t *span"] + [c_decl(a) for a in self.start.args])

    def end_params(self):
        return ", ".join([f"billing_{self.base}_t *span"] + [c_decl(a) for a in self.extra])


def spans(probes):
    """Every Span of probes, in billing.d's order of the -start probes."""
    by_name = {p.d_name: p for p in probes}
    return [Span(p, by_name[p.d_name[:-len("__start")] + "__done"]) for p in probes
            if p.d_name.endswith("__start") and p.d_name[:-len("__start")] + "__done" in by_name]


def c_decl(arg):
    name, t, _ = arg
    ctype = TYPES[t][0]
    return f"{ctype}{'' if ctype.endswith('*') else ' '}{name}"

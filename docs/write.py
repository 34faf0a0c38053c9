#!/usr/bin/env python3
"""The docs writer: every generated block of every page, written or checked.

  python3 docs/write.py --check [--build-dir BUILD] [--only KIND,...]
  python3 docs/write.py --write [--build-dir BUILD] [--only KIND,...]

--check exits 1 naming every block that differs from its source, every
results file a figure may not be quoted from (docs/figures.py), and every
number with a unit in prose that has no source; --write rewrites the
blocks.  BUILD (default: build) holds the built programs whose tables the
pages carry.  --only writes or checks the blocks of those kinds alone.

Every generated text sits between the same two markers, inline
(`<!-- gen:KIND ARGS -->text<!-- /gen -->`) or as a block of lines (the
opening marker ends its line):

  KIND           ARGS            the text
  probe-table                    provider/billing.d's probes (provider/generate.py)
  meson-options                  meson_options.txt's options
  option-table   PROGRAM [CMD]   `PROGRAM [CMD] --print-option-table`, run from BUILD
  metric-table                   `billing-exporter --print-metric-table`, run from BUILD
  files          DIR             DIR's C files, each with the first sentence of its header
  fig            NAME            docs/figures.py's FIGURES[NAME]: keys of results files, billing.d
  bench-figures                  bench/README.md's summary of the bench's results files

bench/results/PART.md, rendered whole from PART.json by bench/run_bench.py,
is checked here too (kind bench-figures).
"""
import difflib
import glob
import os
import re
import subprocess
import sys

import figures

ROOT = figures.ROOT
PAGES = ("README.md", "docs/*.md", "bench/README.md", "monitoring/README.md", "examples/*/README.md")
# The pages whose prose may hold no measured figure typed by hand.
PROSE_PAGES = PAGES[:4]
# The programs whose tables the pages carry, where a build puts them.
PROGRAMS = {
    "billing-probes": "tools/billing-probes/billing-probes",
    "billing-exporter": "tools/billing-exporter/billing-exporter",
    "billingd": "examples/billingd/billingd",
    "billing-load": "examples/billing-load/billing-load",
}
# A marker quoted in inline code (a backtick before it) is text, not a marker.
MARKER = re.compile(r"(?<!`)<!-- gen:(?P<kind>[\w-]+)(?P<args>(?: [\w./-]+)*) -->(?P<body>.*?)<!-- /gen -->", re.S)
OPENING = re.compile(r"(?<!`)<!-- gen:")


class Refused(Exception):
    """A block that cannot be written: why, in one line."""


def provider_table(_args, _ctx):
    sys.path.insert(0, os.path.join(ROOT, "provider"))
    import generate
    return generate.probe_table(generate.parse(os.path.join(ROOT, "provider", "billing.d")))


def meson_options(_args, _ctx):
    """meson_options.txt as a table: each option, its type, default and description."""
    text = figures.read("meson_options.txt")
    o = ["| option | type | default | what it does |", "|---|---|---|---|"]
    for m in re.finditer(r"^option\((.*?)\)\s*$", text, re.M | re.S):
        spec = m.group(1)
        name = re.match(r"\s*'(\w+)'", spec).group(1)

        def field(key):
            f = re.search(key + r"\s*:\s*('(?:[^'\\]|\\.)*'|\[[^\]]*\]|\w+)", spec)
            return f and f.group(1).strip("'").replace("\\'", "'")
        kind = field("type")
        if kind == "combo":
            kind += ": " + ", ".join(re.findall(r"'(\w+)'", field("choices")))
        o.append(f"| `-D{name}` | {kind} | {field('value')} | {field('description').replace('|', '/').replace('<', '&lt;')} |")
    return "\n".join(o) + "\n"


def file_headers(args, _ctx):
    """The C files of a folder, each with the first sentence of its header
    comment (" * NAME.c -- what it is.  ..."): a folder's map that cannot
    fall behind its files."""
    if len(args) != 1 or not os.path.isdir(os.path.join(ROOT, args[0])):
        raise Refused("names no folder of the tree")
    o = ["| file | what it is (its header) |", "|---|---|"]
    for path in sorted(glob.glob(os.path.join(ROOT, args[0], "*.c"))):
        name = os.path.basename(path)
        head = re.match(r"/\*\s*\n((?: \*[^\n]*\n)+?) \*(?:/|\s*\n)", figures.read(os.path.relpath(path, ROOT)) + "\n")
        said = head and re.match(re.escape(name) + r" -- (.*)", "\n".join(ln[3:] for ln in head.group(1).splitlines()), re.S)
        if not said:
            raise Refused(f"{args[0]}/{name} has no header \"{name} -- what it is.\"")
        # a sentence ends at a period before two spaces or a line's end
        sentence = " ".join(re.match(r"(.*?\.)(?:  |\n|$)|(.*)", said.group(1).split("\n\n")[0] + "\n", re.S)
                            .group(0).split())
        o.append(f"| `{name}` | " + sentence.replace("|", "\\|") + " |")
    return "\n".join(o) + "\n"


def program_output(args, ctx, flag):
    if not args or args[0] not in PROGRAMS:
        raise Refused(f"names no program of {', '.join(PROGRAMS)}")
    exe = os.path.join(ctx["build"], PROGRAMS[args[0]])
    if not os.access(exe, os.X_OK):
        raise Refused(f"{exe} is not built (ninja -C {ctx['build']} {PROGRAMS[args[0]]})")
    p = subprocess.run([exe] + args[1:] + [flag], capture_output=True, text=True, timeout=30)
    if p.returncode != 0 or p.stderr:
        raise Refused(f"`{' '.join(args + [flag])}` exited {p.returncode}: {p.stderr.strip()[:200]}")
    return p.stdout


def option_table(args, ctx):
    return program_output(args, ctx, "--print-option-table")


def metric_table(args, ctx):
    return program_output(["billing-exporter"] + args, ctx, "--print-metric-table")


def figure(args, ctx):
    if len(args) != 1 or args[0] not in figures.FIGURES:
        raise Refused("names no figure of docs/figures.py's FIGURES")
    try:
        return figures.FIGURES[args[0]][1](ctx["results"])
    except ValueError as e:  # a constant its source no longer names, a results file that is not JSON
        raise Refused(str(e))
    except OSError as e:  # no results file: no figure (and the check refuses it)
        return f"not measured: {os.path.relpath(e.filename, ROOT) if e.filename else e} is missing"
    except (KeyError, StopIteration):  # a part the published run skipped: no figure, and says so
        return "not measured in the published run"


def bench_summary(_args, ctx):
    return figures.run_bench().readme_figures(ctx["runs"])


KINDS = {
    "probe-table": provider_table,
    "meson-options": meson_options,
    "option-table": option_table,
    "metric-table": metric_table,
    "files": file_headers,
    "fig": figure,
    "bench-figures": bench_summary,
}


def regenerate(text, ctx, only=None):
    """text with each block written anew, and [(marker, why)] of blocks that could not be."""
    refused = []

    def block(m):
        kind, args = m.group("kind"), m.group("args").split()
        head = m.group(0)[:m.start("body") - m.start()]
        if only is not None and kind not in only:
            return m.group(0)
        try:
            if kind not in KINDS:
                raise Refused(f"unknown kind (one of {', '.join(KINDS)})")
            body = KINDS[kind](args, ctx).rstrip("\n")
        except (Refused, OSError, subprocess.SubprocessError) as e:
            refused.append((head, str(e)))
            return m.group(0)
        lines = m.group("body").startswith("\n")
        return head + ("\n" + body + "\n" if lines else body) + "<!-- /gen -->"
    return MARKER.sub(block, text), refused


def pages(patterns=PAGES):
    found = []
    for pattern in patterns:
        found += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return [os.path.relpath(p, ROOT) for p in found]


def context(build):
    return {"build": build, "results": figures.Results(), "runs": figures.run_bench().load_runs(ROOT)}


def generated(ctx, only=None, texts=None):
    """{path: (text now, text as generated)} of every page and of each
    bench/results/PART.md, and [(path, marker, why)] of blocks not written.
    texts: {path: text} read instead of the file (a test's edit)."""
    out, refused, texts = {}, [], texts or {}
    rendered = {} if only is not None and "bench-figures" not in only else figures.run_bench().rendered(ROOT)
    for rel in sorted(set(pages()) | set(rendered)):
        now = texts.get(rel) or (figures.read(rel) if os.path.exists(os.path.join(ROOT, rel)) else "")
        new, bad = regenerate(rendered.get(rel, now), ctx, only)
        if len(OPENING.findall(now)) != len(MARKER.findall(now)):
            bad.append(("<!-- gen:", "a marker without its <!-- /gen --> or with arguments it cannot read"))
        out[rel] = (now, new)
        refused += [(rel, head, why) for head, why in bad]
    return out, refused


def quoted():
    """(page, figure, results files it comes from) of every measured figure the pages quote."""
    rb, found = figures.run_bench(), []
    for rel in pages():
        for m in MARKER.finditer(figures.read(rel)):
            name = m.group("args").strip()
            if m.group("kind") == "fig":
                sources = figures.FIGURES.get(name, ((), None))[0]
                files = [f for f in figures.expand(sources) if f.startswith(figures.RESULTS + "/")]
            elif m.group("kind") == "bench-figures":
                files = [f for f in map(figures.part, rb.PUBLISHED) if os.path.exists(os.path.join(ROOT, f))]
            else:
                continue
            if files:
                found.append((rel, name or m.group("kind"), files))
    return found


# --- figures in prose ---------------------------------------------------------

UNIT = (r"(?:ns|µs|us|ms|s|sec|seconds|min|minutes|h|%|×|x|kB|KB|MB|GB|KiB|MiB|bytes|instructions|"
        r"req/s|requests/s|events/s|M events/s|series|fires|times)")
NUMBER = r"[−-]?\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(r"(?<![\w.\-/])" + NUMBER + r"(?:\s?(?:–|-|\.\.|to)\s?" + NUMBER + r")?\s?" + UNIT + r"(?![\w/])")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_figures(text):
    """(line number, figure) for each number with a unit in the prose of a
    page: outside code (fenced, indented, inline), outside generated blocks."""
    text = MARKER.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found, fenced = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            continue
        line = re.sub(r"`[^`]*`", "``", line)
        found += [(n, m.group(0)) for m in FIGURE.finditer(line)]
    return found


def unsourced():
    """(page, line, figure) of figures in prose that neither a block nor FROM_SOURCE accounts for."""
    tied = {(page, fig) for page, fig, _, _ in figures.FROM_SOURCE}
    return [(rel, n, fig) for rel in pages(PROSE_PAGES) for n, fig in prose_figures(figures.read(rel))
            if (rel, fig) not in tied]


def broken_ties():
    """FROM_SOURCE entries whose page no longer says the figure or whose source no longer holds it."""
    bad = []
    for page, fig, source, pattern in figures.FROM_SOURCE:
        if fig not in [f for _, f in prose_figures(figures.read(page))]:
            bad.append(f"{page}: no longer says {fig!r} (drop its FROM_SOURCE entry)")
        elif not os.path.exists(os.path.join(ROOT, source)) or not re.search(pattern, figures.read(source)):
            bad.append(f"{page}: {fig!r} comes from {source}, which no longer matches /{pattern}/")
    return bad


def problems(ctx, write=False, only=None, texts=None):
    """Every problem of the pages, one line each; with write, the stale blocks written first."""
    out, refused = generated(ctx, only, texts)
    found = [f"{rel}: {head} cannot be written: {why}" for rel, head, why in refused]
    for rel, (now, new) in out.items():
        if now == new:
            continue
        if write:
            with open(os.path.join(ROOT, rel), "w", encoding="utf-8") as f:
                f.write(new)
            print(f"wrote the generated blocks of {rel}")
        else:
            diff = difflib.unified_diff(now.splitlines(), new.splitlines(), rel, rel + " (from its sources)",
                                        n=0, lineterm="")
            found.append(f"{rel}: generated blocks differ from their sources:\n  " + "\n  ".join(list(diff)[2:12]))
    if only is None or "fig" in only or "bench-figures" in only:
        found += figures.refusals(quoted())
    if only is None:
        found += [f"{rel}:{n}: {fig!r} has no source: generate it (a block) or tie it (FROM_SOURCE)"
                  for rel, n, fig in unsourced()]
        found += broken_ties()
    return found


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="docs/write.py", description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 naming every stale block and refused figure")
    mode.add_argument("--write", action="store_true", help="rewrite every generated block")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="the build with the programs (build)")
    ap.add_argument("--only", type=lambda s: s.split(","), help="these kinds only (comma-separated)")
    a = ap.parse_args(argv[1:])
    unknown = set(a.only or ()) - set(KINDS)
    if unknown:
        ap.error(f"unknown kind(s) {', '.join(sorted(unknown))}; kinds are {', '.join(KINDS)}")
    found = problems(context(os.path.abspath(a.build_dir)), a.write, a.only)
    for p in found:
        print("docs/write.py: " + p, file=sys.stderr)
    if found and a.check:
        print(f"docs/write.py: {len(found)} problem(s); `python3 docs/write.py --write` rewrites generated blocks; "
              "a refused results file is measured again (bench/README.md, \"Publishing\")", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

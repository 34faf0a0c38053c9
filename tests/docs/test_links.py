#!/usr/bin/env python3
"""The documentation holds together: every relative link in README.md,
docs/*.md and every folder's README.md (two levels down) names a file that exists (and a heading that exists, for #anchors);
every file in docs/ is listed in docs/README.md; README.md stays short.

Usage: test_links.py SOURCE_ROOT
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402

README_MAX_LINES = 150  # issue 11: a newcomer's page, the rest in docs/

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")


def prose_lines(path):
    """(line number, text) of the lines outside fenced and indented code,
    with inline code removed: links are only links in prose."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence or line.startswith("    "):
                continue
            yield n, INLINE_CODE.sub("", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped,
    spaces to hyphens (so "a — b" gives "a--b")."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found = set()
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                in_fence = not in_fence
            elif not in_fence and line.startswith("#"):
                found.add(slug(line.lstrip("#")))
    return found


def main():
    if len(sys.argv) != 2:
        print("usage: test_links.py SOURCE_ROOT", file=sys.stderr)
        sys.exit(2)
    root = os.path.abspath(sys.argv[1])
    c = bt.Checks()

    pages = [os.path.join(root, "README.md"),
             os.path.join(root, "d-scripts", "README.md"),
             os.path.join(root, "bench", "README.md")]
    pages += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    # Every other folder's README (build trees left out).
    for readme in sorted(glob.glob(os.path.join(root, "*", "README.md")) +
                         glob.glob(os.path.join(root, "*", "*", "README.md"))):
        top = os.path.relpath(readme, root).split(os.sep)[0]
        if readme not in pages and not top.startswith("build"):
            pages.append(readme)

    for page in pages:
        rel = os.path.relpath(page, root)
        if not c.check(os.path.isfile(page), "%s exists" % rel):
            continue
        links = 0
        for n, line in prose_lines(page):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                links += 1
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not c.check(os.path.exists(dest), "%s:%d: %s exists" % (rel, n, target)):
                    continue
                if frag and dest.endswith(".md"):
                    c.check(frag in anchors(dest), "%s:%d: %s names a heading" % (rel, n, target))
        print("     %s: %d relative links" % (rel, links))

    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    c.check(lines <= README_MAX_LINES,
            "README.md is %d lines (at most %d: reference goes to docs/)" % (lines, README_MAX_LINES))

    index = os.path.join(root, "docs", "README.md")
    listed = set()
    if os.path.isfile(index):
        for _, line in prose_lines(index):
            listed.update(os.path.normpath(t.partition("#")[0]) for t in LINK.findall(line))
    for page in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        name = os.path.basename(page)
        if name != "README.md":
            c.check(name in listed, "docs/README.md lists docs/%s" % name)
    c.finish()


if __name__ == "__main__":
    main()

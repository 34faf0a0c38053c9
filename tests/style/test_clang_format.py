#!/usr/bin/env python3
"""One C style: every C source and header of the tree is as .clang-format
lays it out (clang-format --dry-run --Werror), and a function's return
type is on its definition's line (clang-format 14 keeps either, as it
keeps every line break with no column limit).  Build directories and
generated files are not sources: only files under the source tree's own
folders are read, never a build*/ folder.

usage: test_clang_format.py SOURCE_ROOT
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402


def sources(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d != "subprojects"]
        for f in files:
            if f.endswith((".c", ".h")):
                yield os.path.join(top, f)


# "TYPE" alone on a line, then "name(" at the start of the next
TYPE_ALONE = re.compile(r"^((?:[A-Za-z_][A-Za-z_0-9]* )*[A-Za-z_][A-Za-z_0-9]*(?: \*+| )?)\n"
                        r"[A-Za-z_][A-Za-z_0-9]*\(", re.M)


def type_alone_lines(path):
    """Line numbers of return types alone on their line in path."""
    text = open(path, encoding="utf-8", errors="replace").read()
    return [text.count("\n", 0, m.start()) + 1 for m in TYPE_ALONE.finditer(text)
            if m.group(1).split()[0] not in ("return", "else", "case", "goto")]


def main():
    root = sys.argv[1]
    exe = bt.require_program("clang-format", "clang-format")
    files = sorted(sources(root))
    bt.check(len(files) > 0, "C sources found under %s" % root)
    r = bt.run([exe, "--dry-run", "--Werror", "--style=file"] + files, timeout=300)
    bad = sorted({line.split(":")[0] for line in r.stderr.splitlines() if ": error:" in line})
    for f in bad:
        print("  not formatted: " + os.path.relpath(f, root))
    bt.check(r.returncode == 0, "%d C files as .clang-format lays them out (%d differ; fix: clang-format -i FILE)"
             % (len(files), len(bad)))
    alone = [(f, n) for f in files for n in type_alone_lines(f)]
    for f, n in alone:
        print("  return type alone on its line: %s:%d" % (os.path.relpath(f, root), n))
    bt.check(not alone, "every function's return type on its definition's line (%d not)" % len(alone))
    bt.finish()


if __name__ == "__main__":
    main()

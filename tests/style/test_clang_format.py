#!/usr/bin/env python3
"""One C style: every C source and header of the tree is as .clang-format
lays it out (clang-format --dry-run --Werror).  Build directories and
generated files are not sources: only files under the source tree's own
folders are read, never a build*/ folder.

usage: test_clang_format.py SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import billingtest as bt  # noqa: E402


def sources(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d != "subprojects"]
        for f in files:
            if f.endswith((".c", ".h")):
                yield os.path.join(top, f)


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
    bt.finish()


if __name__ == "__main__":
    main()

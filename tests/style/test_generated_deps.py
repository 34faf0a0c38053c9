"""Every file generated from billing.d is rebuilt when any part of its
generator changes: each ninja edge whose command runs a generator script
lists, as inputs, every provider/*.py that script imports (transitively),
billing.d, and for generate.py every other file of provider/ (what its
modules read: known values, templates).  A generator module missing from an edge's inputs leaves
that file stale after an edit, with no error.

    test_generated_deps.py SOURCE_ROOT BUILD_ROOT
"""
import os
import re
import sys

SOURCE, BUILD = sys.argv[1], sys.argv[2]
PROVIDER = os.path.join(SOURCE, "provider")
# generator scripts, by the name their command runs, and where their imports live
GENERATORS = ("provider/generate.py", "d-scripts/function_sites.py")


def imports(path, seen):
    """The provider modules path imports, transitively."""
    for name in re.findall(r"^\s*(?:import|from)\s+(\w+)", open(path).read(), flags=re.M):
        mod = os.path.join(PROVIDER, name + ".py")
        if os.path.exists(mod) and mod not in seen:
            seen.add(mod)
            imports(mod, seen)
    return seen


def edges(text):
    """(outputs, inputs, command) of each build edge in build.ninja."""
    text = text.replace("$\n", "")
    for m in re.finditer(r"^build (.*)\n((?: .*\n)*)", text, flags=re.M):
        command = re.search(r"^ COMMAND = (.*)$", m.group(2), flags=re.M)
        head = m.group(1)
        inputs = head.split(":", 1)[1] if ":" in head else ""
        yield head.split(":", 1)[0].split(), inputs.split(), command.group(1) if command else ""


def main():
    needed = {g: imports(os.path.join(SOURCE, g), set()) | {os.path.join(PROVIDER, "billing.d")} for g in GENERATORS}
    needed["provider/generate.py"] |= {os.path.join(PROVIDER, n) for n in os.listdir(PROVIDER)
                                       if not n.startswith(".") and n != "__pycache__"}
    failures, checked = [], 0
    for outputs, inputs, command in edges(open(os.path.join(BUILD, "build.ninja")).read()):
        have = {os.path.realpath(os.path.join(BUILD, i)) for i in inputs}
        for gen, want in needed.items():
            if not re.search(r"(^|[ /])%s( |$)" % re.escape(gen), command):
                continue
            checked += 1
            missing = sorted(os.path.relpath(w, SOURCE) for w in want if os.path.realpath(w) not in have)
            if missing:
                failures.append("%s: not rebuilt when %s change(s)" % (" ".join(outputs), ", ".join(missing)))
    for f in failures:
        print("FAIL " + f)
    print("%d generated files checked, %d with a missing dependency" % (checked, len(failures)))
    if checked == 0:
        print("FAIL no generator edge found in build.ninja")
        return 1
    return 1 if failures else 0


sys.exit(main())

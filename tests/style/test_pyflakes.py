"""Every Python file of the tree is clean under pyflakes (unused imports,
undefined names, shadowed definitions): a finding fails here with its
file and line.  Build trees and hidden directories are skipped.

    test_pyflakes.py SOURCE_ROOT
"""
import os
import shutil
import subprocess
import sys

root = sys.argv[1]
pyflakes = shutil.which("pyflakes3") or shutil.which("pyflakes")
if not pyflakes:
    print("pyflakes3 is not installed (Debian: pyflakes3; tests/install-deps.sh installs it)")
    sys.exit(77)

files = []
for top, dirs, names in os.walk(root):
    # a build tree (meson-private) or a hidden directory holds no source of ours
    dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                     and not os.path.exists(os.path.join(top, d, "meson-private")))
    files += [os.path.join(top, n) for n in sorted(names) if n.endswith(".py")]
p = subprocess.run([pyflakes] + files, capture_output=True, text=True)
sys.stdout.write(p.stdout + p.stderr)
print("%d Python files, pyflakes exit %d" % (len(files), p.returncode))
sys.exit(1 if p.returncode or len(files) < 10 else 0)

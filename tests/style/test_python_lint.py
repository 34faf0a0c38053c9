"""Every Python file of the tree is clean under flake8 (pyflakes: unused
imports, undefined names; pycodestyle: the layout), with the settings of
.flake8 at the top of the tree: a finding fails here with its file, line
and code.  Build trees and hidden directories are skipped (.flake8).

    test_python_lint.py SOURCE_ROOT
"""
import os
import shutil
import subprocess
import sys

root = sys.argv[1]
flake8 = shutil.which("flake8")
if not flake8:
    print("flake8 is not installed (Debian: flake8; tests/install-deps.sh installs it)")
    sys.exit(77)
files = []
for top, dirs, names in os.walk(root):
    # a build tree (meson-private) or a hidden directory holds no source of ours
    dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                     and not os.path.exists(os.path.join(top, d, "meson-private")))
    files += [os.path.relpath(os.path.join(top, n), root) for n in sorted(names) if n.endswith(".py")]
p = subprocess.run([flake8, "--config", os.path.join(root, ".flake8")] + files, capture_output=True, text=True,
                   cwd=root)
sys.stdout.write(p.stdout + p.stderr)
print("%d Python files, flake8 exit %d" % (len(files), p.returncode))
sys.exit(1 if p.returncode or len(files) < 10 else 0)

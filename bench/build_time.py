#!/usr/bin/env python3
"""build_time.py - how long a fresh clone takes to become an installed kit.

Clones SOURCE's HEAD into a new directory and times, one after another, the
README's three commands there:

    meson setup build && ninja -C build && meson install -C build --destdir DEST

with ccache off (CCACHE_DISABLE=1, /usr/lib/ccache out of PATH: every object
compiled) and ninja's default parallelism on this machine's cores.  DEST
keeps the install inside the work directory (the default prefix /usr/local
is not touched); the work directory is removed after.

Usage:
    python3 bench/build_time.py --source-dir . [--out FILE] [--publish]

Fields (seconds, wall clock): setup_s, build_s, install_s, total_s; steps:
ninja's edges run by `ninja -C build`; installed: files under DEST; the
machine, its load average at start and end (the figure is this machine's,
beside whatever else ran).  --out writes the stamped results (the run
header run_bench.py writes: commit, date, CPU, kernel, cores, compiler,
command, what it measures) to FILE; --publish to
SOURCE/bench/results/build-time.json.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_bench  # noqa: E402  (machine(), git(), MACHINE_KEYS: the same stamp)

PART = "build-time"
# What the figure measures: everything a plain build compiles and installs.
MEASURES = ["meson.build", "meson_options.txt", "provider", "include", "lib", "tools", "examples", "d-scripts",
            "monitoring", "bench/meson.build", "tests/meson.build", "bench/build_time.py"]
COMMANDS = "meson setup build && ninja -C build && meson install -C build --destdir DEST (CCACHE_DISABLE=1)"


def no_ccache_env():
    env = dict(os.environ, CCACHE_DISABLE="1")
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if "ccache" not in p)
    return env


def timed(cmd, cwd, env, log):
    """Runs cmd, its output appended to log; (seconds, output).  Raises with
    the output's tail when it fails: a failed build has no figure."""
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    s = time.monotonic() - t0
    with open(log, "a") as f:
        f.write("$ %s\n%s" % (" ".join(cmd), r.stdout))
    if r.returncode != 0:
        raise RuntimeError("%s exited %d:\n%s" % (" ".join(cmd), r.returncode, r.stdout[-3000:]))
    return s, r.stdout


def measure(source_dir, work):
    env = no_ccache_env()
    clone, log = os.path.join(work, "clone"), os.path.join(work, "build.log")
    subprocess.run(["git", "clone", "--quiet", "--no-local", source_dir, clone], check=True)
    load_start = os.getloadavg()[0]
    setup_s, setup_out = timed(["meson", "setup", "build"], clone, env, log)
    build_s, build_out = timed(["ninja", "-C", "build"], clone, env, log)
    dest = os.path.join(work, "dest")
    install_s, _ = timed(["meson", "install", "-C", "build", "--destdir", dest], clone, env, log)
    installed = sum(len(files) for _, _, files in os.walk(dest))
    summary = re.findall(r"^\s+(\S[^:\n]*?)\s*: (\S.*)$", setup_out.split("User defined options")[0]
                         .split("billing-probes 0")[-1], re.M)
    return {
        "setup_s": round(setup_s, 1), "build_s": round(build_s, 1), "install_s": round(install_s, 1),
        "total_s": round(setup_s + build_s + install_s, 1),
        "steps": len(re.findall(r"^\[\d+/\d+\]", build_out, re.M)),
        "installed": installed,
        "configuration": {k: v for k, v in summary},
        "meson": subprocess.run(["meson", "--version"], capture_output=True, text=True).stdout.strip(),
        "load_average_at_end": round(os.getloadavg()[0], 2),
        "load_average_at_start": round(load_start, 2),
    }


def header(source_dir, m):
    commit = run_bench.git(source_dir, "rev-parse", "--short=12", "HEAD")
    h = {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    h.update({k: m[k] for k in run_bench.MACHINE_KEYS if k in m})
    return dict(h, command=COMMANDS, measures=MEASURES)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--out", metavar="FILE", help="write the stamped results to FILE")
    ap.add_argument("--publish", action="store_true", help="write them to SOURCE/bench/results/%s.json" % PART)
    a = ap.parse_args()
    source_dir = os.path.abspath(a.source_dir)
    if run_bench.git(source_dir, "rev-parse", "HEAD") is None:
        sys.exit("build_time.py: %s is not a git checkout: the figure is of a clone of its HEAD" % source_dir)
    m = run_bench.machine()
    work = tempfile.mkdtemp(prefix="bench-build-time-")
    try:
        data = measure(source_dir, work)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        sys.exit("build_time.py: %s" % e)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = {"run": header(source_dir, m), "data": data}
    print("fresh clone of %s, meson %s, %d cores: setup %.1f s, ninja %.1f s (%d steps), install %.1f s "
          "(%d files): %.1f s (load %.2f at start, %.2f at end)"
          % (results["run"]["commit"], data["meson"], m["cores"], data["setup_s"], data["build_s"], data["steps"],
             data["install_s"], data["installed"], data["total_s"], data["load_average_at_start"],
             data["load_average_at_end"]))
    outs = ([a.out] if a.out else []) + ([run_bench.results_path(source_dir, PART)] if a.publish else [])
    for path in outs:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
        print("written: %s" % path)


if __name__ == "__main__":
    main()

"""Every test that runs alone (is_parallel: false) has priority alone_last
(tests/meson.build), and no other test a negative priority: meson starts
a test that runs alone only once every running test has ended, so one
placed between others leaves a core idle while the longest running test
ends.  Run last, together, they pay that wait once.  A test added with
is_parallel: false and no priority fails here, named.

    test_alone_last.py BUILD_ROOT
"""
import json
import os
import sys


def main():
    intro = os.path.join(sys.argv[1], "meson-info", "intro-tests.json")
    with open(intro) as f:
        tests = json.load(f)
    alone = [t["name"] for t in tests if not t["is_parallel"]]
    wrong = [t["name"] for t in tests if (not t["is_parallel"]) != (t["priority"] < 0)]
    for name in wrong:
        print("test_alone_last: %s: is_parallel: false goes with priority: alone_last, and only it" % name)
    print("%d tests run alone, %d of them out of place" % (len(alone), len(wrong)))
    return 1 if wrong or not tests else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
Checks that no test can pass by not running: in the C sources below the
given directory, g_test_incomplete() appears nowhere (a known bug is a
failing test, not an expected fail), and g_test_skip() only in the helpers
that make a skip a failure under REQUIRE_INTEGRATION=1.
Usage: check-skips.py TESTS_DIR ALLOWED_FILE...
(ALLOWED_FILE: where g_test_skip() may appear, relative to TESTS_DIR)
"""

import os
import re
import sys

CALL = re.compile(r"\b(g_test_incomplete(?:_printf)?|g_test_skip(?:_printf)?)\s*\(")


def main():
    if len(sys.argv) < 2:
        print("usage: check-skips.py TESTS_DIR ALLOWED_FILE...", file=sys.stderr)
        return 2
    root, allowed = sys.argv[1], set(sys.argv[2:])
    problems = []
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as source:
                for number, line in enumerate(source, 1):
                    for match in CALL.finditer(line):
                        function = match.group(1)
                        if function.startswith("g_test_skip") and relative in allowed:
                            continue
                        problems.append("%s:%d: %s()" % (relative, number, function))
    for problem in problems:
        print(problem)
    if problems:
        print("%d call(s) that let a test pass without running: g_test_incomplete() is never "
              "used; g_test_skip() only in %s" % (len(problems), ", ".join(sorted(allowed))))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

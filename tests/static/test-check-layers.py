#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
The layers check on its fixture (layers-fixture/): the lower library calls
the upper one through a function pointer, a call that no symbol of the
objects shows. Without --sources the check cannot see it; with them it names
the call and the circle it closes; with the pointer's header given in
--pointers-in it lets it pass.
Usage: test-check-layers.py CHECK FIXTURE_DIR LOW.a HIGH.a
"""

import subprocess
import sys


def run(check, args):
    """the check's exit status and its output"""
    done = subprocess.run([sys.executable, check] + args, capture_output=True, text=True)
    return done.returncode, done.stdout


def expect(name, result, status, lines):
    """the problems of one run, as text, or "" when it went as expected"""
    got_status, output = result
    problems = []
    if got_status != status:
        problems.append("%s: exit status %d, not %d" % (name, got_status, status))
    for line in lines:
        if line not in output.splitlines():
            problems.append("%s: no line '%s'" % (name, line))
    if problems:
        problems.append("%s: the output was:\n%s" % (name, output))
    return "\n".join(problems)


def main():
    check, fixture, low, high = sys.argv[1:5]
    libs = ["--", low, high]
    low_name, high_name = low.rsplit("/", 1)[-1], high.rsplit("/", 1)[-1]
    problems = [
        expect("symbols only", run(check, libs), 0, ["2 files checked, 0 problems"]),
        expect("with the sources", run(check, ["--sources", fixture] + libs), 1, [
            "low.c (%s) calls changed_cb of %s, a library above it, through the function "
            "pointer changed declared in low.h" % (low_name, high_name),
            "these files call each other in a circle through the function pointer changed "
            "(declared in low.h): high.c, low.c",
            "2 files checked, 2 problems",
        ]),
        expect("the pointer declared as an interface",
               run(check, ["--sources", fixture, "--pointers-in", fixture + "/low.h"] + libs), 0,
               ["2 files checked, 0 problems"]),
    ]
    problems = [p for p in problems if p]
    for problem in problems:
        print(problem)
    print("3 runs of the layers check, %d not as expected" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

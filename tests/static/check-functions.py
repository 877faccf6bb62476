#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
Checks the length and the nesting of every function of the C sources given:
  - a function's body (from its opening brace to its closing one) is at most
    --max-lines lines;
  - its blocks are nested at most --max-depth deep, the body itself being
    depth 1 (an `if` block in the body is 2);
  - a file over --warn-lines lines is reported, as a warning only: one object
    may live in one file.
The functions that break a limit today are listed in the exceptions file,
one per line as `PATH FUNCTION REASON`, PATH relative to the project's root.
An exception that no longer breaks a limit is reported too, so that the list
only shrinks.
Usage: check-functions.py --root DIR --exceptions FILE [--max-lines N]
       [--max-depth N] [--warn-lines N] --sources DIR...
"""

import argparse
import os
import re
import sys

# a comment, a string or a character literal: replaced by spaces, keeping lines
LEXEMES = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                     re.DOTALL)
IDENTIFIER_BEFORE_PAREN = re.compile(r"(\w+)\s*$")


def blank(match):
    return re.sub(r"[^\n]", " ", match.group(0))


def clean(text):
    """the text without comments, literals and preprocessor lines, line for line"""
    text = LEXEMES.sub(blank, text)
    lines = text.split("\n")
    out, continued = [], False
    for line in lines:
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        out.append("" if directive else line)
    return "\n".join(out)


def function_name(head):
    """the name of the function whose definition `head` (the text before its
    body's brace) ends with, or None when the brace opens something else"""
    head = head.rstrip()
    if not head.endswith(")"):
        return None
    depth, i = 0, len(head) - 1
    while i >= 0:
        if head[i] == ")":
            depth += 1
        elif head[i] == "(":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    match = IDENTIFIER_BEFORE_PAREN.search(head[:i])
    if match is None or match.group(1) in ("if", "while", "for", "switch", "sizeof"):
        return None
    return match.group(1)


def functions(text):
    """(name, first line, lines, deepest nesting) of each function defined"""
    found = []
    depth, start, head_from = 0, None, 0
    deepest, name, line = 0, None, 1
    for i, char in enumerate(text):
        if char == "\n":
            line += 1
        elif char == "{":
            depth += 1
            if depth == 1:
                name = function_name(text[head_from:i])
                start, deepest = line, 1
            deepest = max(deepest, depth)
        elif char == "}":
            depth -= 1
            if depth == 0:
                if name is not None:
                    found.append((name, start, line - start + 1, deepest))
                head_from = i + 1
        elif char == ";" and depth == 0:
            head_from = i + 1
    return found


def read_exceptions(path):
    exceptions = {}
    with open(path, encoding="utf-8") as listing:
        for number, entry in enumerate(listing, 1):
            entry = entry.strip()
            if not entry or entry.startswith("#"):
                continue
            fields = entry.split(None, 2)
            if len(fields) < 3:
                sys.exit("%s:%d: expected PATH FUNCTION REASON" % (path, number))
            exceptions[(fields[0], fields[1])] = fields[2]
    return exceptions


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--exceptions", required=True)
    parser.add_argument("--max-lines", type=int, default=100)
    parser.add_argument("--max-depth", type=int, default=5)
    parser.add_argument("--warn-lines", type=int, default=1500)
    parser.add_argument("--sources", nargs="+", required=True)
    args = parser.parse_args()
    exceptions = read_exceptions(args.exceptions)
    problems, warnings, used, checked = [], [], set(), 0

    for top in args.sources:
        for folder, _, files in sorted(os.walk(top)):
            for file_name in sorted(files):
                if not file_name.endswith(".c"):
                    continue
                path = os.path.join(folder, file_name)
                relative = os.path.relpath(path, args.root)
                with open(path, encoding="utf-8") as source:
                    text = source.read()
                if text.count("\n") > args.warn_lines:
                    warnings.append("warning: %s has %d lines, over %d"
                                    % (relative, text.count("\n"), args.warn_lines))
                for name, first, lines, deepest in functions(clean(text)):
                    checked += 1
                    if lines <= args.max_lines and deepest <= args.max_depth:
                        continue
                    if (relative, name) in exceptions:
                        used.add((relative, name))
                        continue
                    problems.append("%s:%d: %s() has %d lines (at most %d) and blocks %d deep "
                                    "(at most %d)" % (relative, first, name, lines,
                                                      args.max_lines, deepest - 1,
                                                      args.max_depth - 1))
    for key in sorted(set(exceptions) - used):
        problems.append("%s: %s() is listed in %s but keeps within the limits: remove it"
                        % (key[0], key[1], os.path.basename(args.exceptions)))
    for line in warnings + problems:
        print(line)
    print("%d functions checked, %d excepted, %d problem%s"
          % (checked, len(used), len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

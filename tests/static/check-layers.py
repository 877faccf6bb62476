#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
Checks the daemon's architecture on its built objects:
  - the libraries, given lowest first, call only downwards: no object of one
    calls a function defined in a library given after it;
  - no two source files call each other, directly or around a circle;
  - a function given with --only-in SYMBOL=FILE is called from that source
    file alone (json-glib's parser, which a peer's text must not reach
    without the nesting check of base/vmr-json.c).
Usage: check-layers.py [--only-in SYMBOL=FILE...] -- LIB.a...
The length of functions and files is check-functions.py's.
"""

import argparse
import os
import re
import subprocess
import sys


NM_LINE = re.compile(r"^(?:.*?\.a):(.*?\.o):\s*[0-9a-fA-F]*\s+(\w)\s+(\S+)$")


def read_archive(path):
    """{object name: (defined functions and data, undefined symbols)} of one archive"""
    out = subprocess.run(["nm", "-A", path], check=True, capture_output=True,
                         text=True).stdout
    objects = {}
    for line in out.splitlines():
        match = NM_LINE.match(line)
        if match is None:
            continue
        member, kind, symbol = match.groups()
        defined, undefined = objects.setdefault(member, (set(), set()))
        if kind == "U":
            undefined.add(symbol)
        elif kind in "TDBR":
            defined.add(symbol)
    return objects


def cycles(graph):
    """the strongly connected components of more than one node (Tarjan)"""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only-in", nargs="+", default=[], metavar="SYMBOL=FILE")
    parser.add_argument("libs", nargs="+")
    args = parser.parse_args()
    problems = []

    layer_of, owner, uses = {}, {}, {}
    for layer, lib in enumerate(args.libs):
        name = os.path.basename(lib)
        for member, (defined, undefined) in read_archive(lib).items():
            node = os.path.basename(member).removesuffix(".o")
            layer_of[node] = (layer, name)
            uses[node] = undefined
            for symbol in defined:
                owner[symbol] = node
    graph = {}
    for node, undefined in uses.items():
        for symbol in undefined:
            target = owner.get(symbol)
            if target is None or target == node:
                continue
            graph.setdefault(node, set()).add(target)
            if layer_of[target][0] > layer_of[node][0]:
                problems.append("%s (%s) calls %s of %s, a library above it"
                                % (node, layer_of[node][1], symbol, layer_of[target][1]))
    for rule in args.only_in:
        symbol, _, allowed = rule.partition("=")
        for node in sorted(uses):
            if symbol in uses[node] and node != allowed:
                problems.append("%s calls %s, which only %s may call" % (node, symbol, allowed))
    for component in cycles(graph):
        problems.append("these files call each other in a circle: " + ", ".join(component))

    for problem in problems:
        print(problem)
    print("%d files checked, %d problem%s" % (len(uses), len(problems),
                                             "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

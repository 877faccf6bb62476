#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
Checks the daemon's architecture on its built objects:
  - the libraries, given lowest first, call only downwards: no object of one
    calls a function defined in a library given after it;
  - no two source files call each other, directly or around a circle;
  - a function given with --only-in SYMBOL=FILE is called from that source
    file alone (json-glib's parser, which a peer's text must not reach
    without the nesting check of base/vmr-json.c);
  - with --sources, the calls through function pointers count too: a file
    that calls through a struct member (`x->member (...)`, `x.member (...)`)
    calls every function assigned to that member by name (`.member = func`,
    `x->member = func;`) anywhere in the sources. Such a call into a library
    above, or one that closes a circle, is a problem unless the member is
    declared in a file given with --pointers-in (the interfaces meant for
    it). A callback handed over as an argument (GAsyncReadyCallback and
    the like) is not followed.
Usage: check-layers.py [--only-in SYMBOL=FILE...] [--sources DIR...]
                       [--pointers-in FILE...] -- LIB.a...
The length of functions and files is check-functions.py's.
"""

import argparse
import os
import re
import subprocess
import sys


NM_LINE = re.compile(r"^(?:.*?\.a):(.*?\.o):\s*[0-9a-fA-F]*\s+(\w)\s+(\S+)$")
# a comment or a string literal, blanked before the sources are read
LEXEMES = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.DOTALL)
# a function pointer declared: `ret (*name) (`, in a struct, a typedef or a parameter
POINTER_DECL = re.compile(r"\(\s*\*\s*(\w+)\s*\)\s*\(")
TYPEDEF_POINTER = re.compile(r"\btypedef\b[^;{}]*?\(\s*\*\s*(\w+)\s*\)\s*\(")
# a function defined: its type on a line of its own (.clang-format breaks after it), its name
# at the start of the next line, its parameters, then its body's brace on a line of its own
FUNCTION_DEF = re.compile(r"^([^\n;{}()#=]+)\n([A-Za-z_]\w*)\s*\([^;{]*\)\s*\n\{", re.MULTILINE)
ASSIGNMENT = re.compile(r"(?:\.|->)\s*(\w+)\s*=\s*&?\s*([A-Za-z_]\w*)\s*(?=[,;}])")
POINTER_CALL = re.compile(r"(?:\.|->)\s*(\w+)\s*\(")


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


def read_sources(dirs):
    """{path: text without comments and strings} of the .c and .h files below @dirs"""
    texts = {}
    for top in dirs:
        for folder, _, names in os.walk(top):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        texts[path] = LEXEMES.sub(" ", f.read())
    return texts


def pointer_members(texts):
    """{member name: set of files declaring it} of the function pointers declared"""
    members, types = {}, set()
    for text in texts.values():
        types.update(TYPEDEF_POINTER.findall(text))
    typed = re.compile(r"^\s*(?:const\s+)?(?:%s)\s+(\w+)\s*;" % "|".join(sorted(types)),
                       re.MULTILINE) if types else None
    for path, text in texts.items():
        found = set(POINTER_DECL.findall(text)) - types
        if typed is not None:
            found.update(typed.findall(text))
        for member in found:
            members.setdefault(member, set()).add(path)
    return members


def pointer_edges(texts, members):
    """(caller file, member, callee's file, callee) of each call through a member"""
    exported, static = {}, {}
    for path, text in texts.items():
        if path.endswith(".c"):
            for type_line, name in FUNCTION_DEF.findall(text):
                if type_line.startswith("static"):
                    static.setdefault(path, set()).add(name)
                else:
                    exported.setdefault(name, set()).add(path)
    assigned = {}
    for path, text in texts.items():
        for member, func in ASSIGNMENT.findall(text):
            # a static function of the assigning file, else wherever it is defined
            files = {path} if func in static.get(path, ()) else exported.get(func, ())
            if member in members:
                assigned.setdefault(member, set()).update((f, func) for f in files)
    edges = set()
    for path, text in texts.items():
        if not path.endswith(".c"):
            continue
        for member in set(POINTER_CALL.findall(text)):
            for target, func in assigned.get(member, ()):
                if target != path:
                    edges.add((path, member, target, func))
    return edges


def pointer_problems(args, layer_of, graph):
    """the calls through function pointers that go up or close a circle"""
    texts = read_sources(args.sources)
    members = pointer_members(texts)
    allowed = {os.path.realpath(p) for p in args.pointers_in}
    root = os.path.commonpath([os.path.realpath(d) for d in args.sources])
    problems, calls, through = [], {}, {}
    for caller, member, target, func in sorted(pointer_edges(texts, members)):
        if any(os.path.realpath(p) in allowed for p in members[member]):
            continue
        node, callee = os.path.basename(caller), os.path.basename(target)
        if node not in layer_of or callee not in layer_of:
            continue
        declared = ", ".join(sorted(os.path.relpath(os.path.realpath(p), root)
                                    for p in members[member]))
        if layer_of[callee][0] > layer_of[node][0]:
            problems.append("%s (%s) calls %s of %s, a library above it, through the function "
                            "pointer %s declared in %s"
                            % (node, layer_of[node][1], func, layer_of[callee][1], member,
                               declared))
        calls.setdefault(node, set()).add(callee)
        through.setdefault((node, callee), set()).add("%s (declared in %s)" % (member, declared))
    seen = {frozenset(c) for c in cycles(graph)}
    both = {node: set(graph.get(node, ())) | calls.get(node, set())
            for node in set(graph) | set(calls)}
    for component in cycles(both):
        if frozenset(component) in seen:
            continue
        members_used = sorted(set().union(*(through.get((a, b), set()) for a in component
                                            for b in component)))
        problems.append("these files call each other in a circle through the function "
                        "pointer%s %s: %s" % ("" if len(members_used) == 1 else "s",
                                              ", ".join(members_used), ", ".join(component)))
    return problems


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
    parser.add_argument("--sources", nargs="+", default=[], metavar="DIR")
    parser.add_argument("--pointers-in", nargs="+", default=[], metavar="FILE")
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
    if args.sources:
        problems += pointer_problems(args, layer_of, graph)

    for problem in problems:
        print(problem)
    print("%d files checked, %d problem%s" % (len(uses), len(problems),
                                             "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The include graph of one directory (default daemon/iverd), from its
#include "..." lines: arrows (file -> header of the same directory), arrows
back up into the manager (into manager.h from anything but manager.c/main.c),
the circles (strongly connected components of more than one node, a .c and
its .h counted as one room) and the largest circle.

  scripts/include-graph.py [DIR] [--verbose]

Exit 0 always: it reports figures, it is not a check."""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room(name):
    """a.c, a.h and a-internal.h are one room (the headers are its doors);
    a-foo.c is a room of its own."""
    base = os.path.splitext(name)[0]
    return base[:-len("-internal")] if base.endswith("-internal") else base


def scc(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "--verbose" in sys.argv
    d = args[0] if args else "daemon/iverd"
    files = sorted(f for f in os.listdir(d) if f.endswith((".c", ".h")))
    local = set(files)
    arrows = []
    for f in files:
        with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
            for inc in INCLUDE.findall(fh.read()):
                if inc in local:
                    arrows.append((f, inc))
    back = [(a, b) for a, b in arrows if b == "manager.h" and room(a) not in ("manager", "main")]
    nodes = {room(f) for f in files}
    edges = {}
    for a, b in arrows:
        if room(a) != room(b):
            edges.setdefault(room(a), set()).add(room(b))
    circles = [c for c in scc(nodes, edges) if len(c) > 1]
    circles.sort(key=len, reverse=True)
    print(f"directory            {d}")
    print(f"include arrows       {len(arrows)}")
    print(f"arrows into manager.h from below  {len(back)}")
    print(f"files including manager.h (not manager.c, main.c)  {len({a for a, _ in back})}")
    print(f"circles              {len(circles)}")
    print(f"largest circle       {len(circles[0]) if circles else 0}"
          + (f"  ({' '.join(circles[0])})" if circles else ""))
    if verbose:
        for a, b in back:
            print(f"  up: {a} -> {b}")
        for c in circles[1:]:
            print(f"  circle {len(c)}: {' '.join(c)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Import cycles between the modules of each crate of the workspace.

Builds, per crate, a graph whose nodes are modules (one per file) and whose edges are the
modules a file names through `crate::a::b`, `super::x` or `self::x` paths, in `use` lines and
in code (comments and unit-test modules are skipped). A module naming one of its ancestors or
descendants is not counted: a child that implements its parent's type (conn/input.rs adding
methods to conn::Connection) is one module split over files. Prints every cycle between other
modules and exits 1 if there is one. Run from the workspace root; CI runs it (.ci/run).
"""
import os, re, sys

def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3]
    parts = rel.split(os.sep)
    if parts[-1] in ('mod', 'lib', 'main'):
        parts = parts[:-1]
    return tuple(parts)

def resolve(mod, segs, known):
    # Longest known module prefix of an absolute path.
    for k in range(len(segs), 0, -1):
        if tuple(segs[:k]) in known:
            return tuple(segs[:k])
    return ()

def crate_graph(src):
    files = {}
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith('.rs'):
                p = os.path.join(d, f)
                files[module_of(src, p)] = open(p).read()
    known = set(files)
    edges = {m: set() for m in files}
    for m, text in files.items():
        text = re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', text, flags=re.S)
        text = re.sub(r'//.*', '', text)
        for path in re.findall(r'\b((?:crate|super|self)(?:::\w+)+)', text):
            segs = path.split('::')
            base = list(m)
            if segs[0] == 'crate':
                absol = segs[1:]
            else:
                while segs and segs[0] in ('super', 'self'):
                    if segs[0] == 'super':
                        base = base[:-1]
                    segs = segs[1:]
                absol = base + segs
            target = resolve(m, absol, known)
            # Glue between a module and its ancestors or descendants is not an import circle.
            if target == m or m[:len(target)] == target or target[:len(m)] == m:
                continue
            edges[m].add(target)
    return edges

def cycles(edges):
    out, seen = [], set()
    def dfs(start, node, stack):
        for n in edges.get(node, ()):
            if n == start:
                cyc = stack + [n]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    out.append(cyc)
            elif n not in stack and len(stack) < 8:
                dfs(start, n, stack + [n])
    for m in edges:
        dfs(m, m, [m])
    return out

bad = 0
for crate in sorted(os.listdir('crates')):
    src = os.path.join('crates', crate, 'src')
    if not os.path.isdir(src):
        continue
    for c in cycles(crate_graph(src)):
        bad += 1
        print(crate + ': ' + ' -> '.join('::'.join(x) or 'crate' for x in c))
print(f"{bad} import cycle(s)")
sys.exit(1 if bad else 0)

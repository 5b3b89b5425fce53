#!/usr/bin/env python3
"""Import cycles between the files of each crate of the workspace.

Every file is a node. A file's edges are the files it names: `use` trees (`crate::`, `self::`,
`super::`, or a child module's name), and `crate::`/`super::`/`self::` or child-module paths
in code (`child::Item`; comments
and unit-test modules are skipped). A path to a name a module re-exports (`pub use a::B`) goes
to the file that defines it, followed through every re-export: `crate::Interface` is
`options.rs`, not `lib.rs`; one that passes on another crate's item (`pub use mpcore::Time`)
is no edge, nor is a child's `crate::Time` when its parent imported `mpcore::Time`. Parent and child files count like any other pair (a child that
writes `use super::*` and a parent that names the child's items are a circle). `mod x;` lines
and `pub use` re-exports are not edges: declaring a module, or passing its names on, is not
using it.

Prints every cycle (its files in order) and exits 1 if there is one not in
`scripts/import_cycles.allow` (one cycle per line, as printed: the known ones, which the
redesign of issue 34 removes; a cycle that is gone must leave the list too, so the list only
shrinks). Run from the workspace root; CI runs it (.ci/run). `--why` prints, for each step of a
cycle, the paths that make it.
"""
import os, re, sys

ALLOW = os.path.join(os.path.dirname(__file__), 'import_cycles.allow')


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3]
    parts = rel.split(os.sep)
    if parts[-1] in ('mod', 'lib', 'main'):
        parts = parts[:-1]
    return tuple(parts)


def strip(text):
    text = re.sub(r'#\[cfg\([^\]]*\btest\b[^\]]*\)\]\s*mod tests \{.*', '', text, flags=re.S)
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    return re.sub(r'//.*', '', text)


def use_trees(text):
    """(is_pub, [segments...]) for every leaf of every `use` tree; `*` for globs; a leaf
    renamed with `as` keeps its original name and gets the new one as `exported`."""
    out = []
    for m in re.finditer(r'\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);', text):
        is_pub = m.group(1) is not None
        def expand(prefix, tree):
            tree = tree.strip()
            if tree.startswith('{') and tree.endswith('}'):
                depth, cur, parts = 0, '', []
                for ch in tree[1:-1]:
                    if ch == ',' and depth == 0:
                        parts.append(cur)
                        cur = ''
                        continue
                    depth += ch == '{'
                    depth -= ch == '}'
                    cur += ch
                parts.append(cur)
                for p in parts:
                    if p.strip():
                        expand(prefix, p)
                return
            k = tree.find('::{')
            if k >= 0:
                expand(prefix + [s for s in tree[:k].split('::') if s], tree[k + 2:])
                return
            name, _, alias = tree.partition(' as ')
            segs = prefix + [s.strip() for s in name.split('::') if s.strip()]
            if segs:
                out.append((is_pub, segs, (alias.strip() or segs[-1])))
        expand([], re.sub(r'\s+', ' ', m.group(2)))
    return out


def crate_graph(src):
    files, texts = {}, {}
    # A crate with a library and a binary: `main.rs` is a crate of its own that uses the
    # library by its name, never by `crate::` (both roots are module `()` here, so it would
    # take the library's place). A `main.rs` that declares modules of its own is refused.
    has_lib = os.path.exists(os.path.join(src, 'lib.rs'))
    main = os.path.join(src, 'main.rs')
    if has_lib and os.path.exists(main) and re.search(r'^\s*(pub\s+)?mod\s+\w+\s*;', strip(open(main).read()), re.M):
        sys.exit(f"{main}: a binary beside a library declares modules; this check does not follow them")
    for d, _, fs in os.walk(src):
        if os.path.relpath(d, src).split(os.sep)[0] == 'bin':
            continue
        for f in fs:
            if has_lib and d == src and f == 'main.rs':
                continue
            if f.endswith('.rs'):
                p = os.path.join(d, f)
                m = module_of(src, p)
                files[m] = os.path.relpath(p, src)
                texts[m] = strip(open(p).read())
    known = set(files)

    def absolute(m, segs):
        """`segs` as written in module `m`, made absolute (None: another crate's path)."""
        base = list(m)
        if segs[0] == 'crate':
            return segs[1:]
        if segs[0] in ('super', 'self'):
            while segs and segs[0] in ('super', 'self'):
                if segs[0] == 'super':
                    base = base[:-1]
                segs = segs[1:]
            return base + segs
        if tuple(base + [segs[0]]) in known:  # a child module, named without `self::`
            return base + segs
        return None

    # Imports and re-exports: (module, name) -> absolute path of what it names (None: in
    # another crate).
    reexports = {}
    for m, text in texts.items():
        for is_pub, segs, exported in use_trees(text):
            # A name a module imports is, to its children, the item it names (children see
            # their parent's private imports too): another crate's item (`use mpcore::Time`,
            # named `crate::Time` below) is no file here.
            if segs[-1] != '*' and segs[-1] != 'self':
                reexports[(m, exported)] = absolute(m, segs)

    def resolve(segs, depth=0):
        """The file (module) defining what absolute path `segs` names."""
        for k in range(len(segs), 0, -1):
            mod = tuple(segs[:k])
            if mod in known:
                rest = segs[k:]
                if rest and depth < 8 and (mod, rest[0]) in reexports:
                    target = reexports[(mod, rest[0])]
                    return None if target is None else resolve(target + rest[1:], depth + 1)
                return mod
        if segs and depth < 8 and ((), segs[0]) in reexports:
            target = reexports[((), segs[0])]
            return None if target is None else resolve(target + segs[1:], depth + 1)
        return ()

    edges = {m: set() for m in files}
    why = {}
    for m, text in texts.items():
        # A re-export is a facade, not a use: what it names is reached through it above.
        paths = [segs for is_pub, segs, _ in use_trees(text) if not is_pub]
        body = re.sub(r'\b(pub(?:\([^)]*\))?\s+)?use\s+[^;]+;', '', text)
        paths += [p.split('::') for p in re.findall(r'\b((?:crate|super|self)(?:::\w+)+)', body)]
        # A child module's items named in code (`spread::Spread` in a field's type): the child
        # module's name first, no `self::` (issue 53: these made no edge before).
        paths += [
            p.split('::')
            for p in re.findall(r'(?<![:\w])([a-z_][a-z0-9_]*(?:::\w+)+)', body)
            if m + (p.split('::')[0],) in known
        ]
        for segs in paths:
            if segs[-1] == '*':
                segs = segs[:-1]
            if not segs:
                continue
            a = absolute(m, segs)
            if a is None:
                continue
            target = resolve(a)
            if target is not None and target != m:
                edges[m].add(target)
                why.setdefault((m, target), set()).add('::'.join(segs))
    return edges, files, why


def cycles(edges):
    """Elementary cycles, each once (Johnson's idea without its speed: small graphs)."""
    out, seen = [], set()
    nodes = sorted(edges)
    index = {n: i for i, n in enumerate(nodes)}

    def dfs(start, node, stack, on):
        for n in sorted(edges.get(node, ())):
            if n not in index or index[n] < index[start]:
                continue
            if n == start:
                key = tuple(stack)
                if key not in seen:
                    seen.add(key)
                    out.append(stack + [n])
            elif n not in on and len(stack) < 10:
                on.add(n)
                dfs(start, n, stack + [n], on)
                on.discard(n)

    for s in nodes:
        dfs(s, s, [s], {s})
    return out


def main():
    allowed = set()
    if os.path.exists(ALLOW):
        allowed = {l.strip() for l in open(ALLOW) if l.strip() and not l.startswith('#')}
    found = []
    for crate in sorted(os.listdir('crates')):
        src = os.path.join('crates', crate, 'src')
        if not os.path.isdir(src):
            continue
        edges, files, why = crate_graph(src)
        for c in cycles(edges):
            found.append(crate + ': ' + ' -> '.join(files[x] for x in c))
            if '--why' in sys.argv:
                for a, b in zip(c, c[1:]):
                    print(f"  {files[a]} names {files[b]}: {', '.join(sorted(why[(a, b)])[:8])}")
    new = [c for c in found if c not in allowed]
    gone = sorted(allowed - set(found))
    for c in found:
        print(('' if c in allowed else 'NEW ') + c)
    print(f"{len(found)} import cycle(s), {len(found) - len(new)} of them known (scripts/import_cycles.allow)")
    for c in gone:
        print(f"gone, remove it from scripts/import_cycles.allow: {c}")
    sys.exit(1 if new or gone else 0)


main()

# No two source files import each other: the file-level graph of `src/`
# (which file's items each file names through `crate::`/`super::`/`self::`
# paths), its 2-cycles printed and failing the check. A parent's
# `pub use child::Item` is the module's public face, not a dependency, and is
# left out. `python3 .ci/imports.py [src] [-v]` (-v: every edge).
import re, glob, os, sys
root = sys.argv[1] if len(sys.argv) > 1 else 'src'
files = [f for f in glob.glob(root + '/**/*.rs', recursive=True)]
def modpath(f):
    p = os.path.relpath(f, root)[:-3].split('/')
    if p[-1] in ('mod', 'lib'): p = p[:-1]
    return p
mods = {tuple(modpath(f)): f for f in files}
def resolve(cur, path):
    parts = path.split('::')
    if parts[0] == 'crate': base = []; parts = parts[1:]
    elif parts[0] == 'super':
        base = list(cur)
        while parts and parts[0] == 'super': base = base[:-1]; parts = parts[1:]
    elif parts[0] == 'self': base = list(cur); parts = parts[1:]
    else: return None
    best = None
    for i in range(len(parts) + 1):
        cand = tuple(base + parts[:i])
        if cand in mods: best = cand
    return best
edges = {}
for f in files:
    cur = modpath(f)
    if os.path.basename(f) in ('mod.rs', 'lib.rs'): pass
    src = open(f).read()
    # strip comments and doc comments
    code = '\n'.join(l for l in src.split('\n') if not l.strip().startswith('//'))
    # a parent's `pub use child::Item` is its public face, not a dependency
    code = re.sub(r'pub(\([a-z]+\))? use [^;]*;', '', code)
    # inline modules (tests, sealed traits): their `super` is the file itself
    code = re.sub(r'(?ms)^(pub(\([a-z]+\))? )?mod [a-z_]+ \{.*?^\}', '', code)
    for m in re.finditer(r'\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)', code):
        t = resolve(cur, m.group(1))
        if t is not None and mods[t] != f:
            edges.setdefault(f, set()).add(mods[t])
    # `use x::{a, b::c}` groups: expand one level
    for m in re.finditer(r'use ((?:crate|super|self)(?:::[a-z_0-9]+)*)::\{([^}]*)\}', code):
        for item in m.group(2).split(','):
            item = item.strip().split('::')[0]
            if not item or item == 'self': continue
            t = resolve(cur, m.group(1) + '::' + item)
            if t is not None and mods[t] != f:
                edges.setdefault(f, set()).add(mods[t])
cyc = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, ())})
for a, b in cyc: print('cycle:', a, '<->', b)
print(f'{len(files)} files, {sum(map(len, edges.values()))} imports, {len(cyc)} cycles')
if '-v' in sys.argv:
    for a in sorted(edges): print(a, '->', ' '.join(sorted(edges[a])))
sys.exit(1 if cyc else 0)

#!/usr/bin/env bash
# The crate's module graph from its `crate::` paths (use lines and inline paths): modules (files),
# import edges, import circles (a parent mod.rs and its own children excepted: declaring them is
# structure, not an import), and imports against the layering (a lower layer naming a higher one).
# Usage: scripts/imports.sh [-v]   (-v lists every edge)
# Exits 1 when there is any circle or import against the layering: CI runs it as a gate.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys

# Layers, low to high: data flows load → select → plan → execute → report → commands; the step
# kinds sit below the playbook model, which is derived from their registry (docs/DESIGN.md).
# A module may use its own layer and the ones below.
LAYERS = [
    # descriptors: a leaf (open-file limits); text: Python's repr and shlex.quote, fnmatch, !unsafe.
    ["error", "yaml", "text", "descriptors"],
    # A leaf (the Secret type and the naming rule) that the vault and everything above use.
    ["secret"],
    # ansible.cfg and ANSIBLE_*: settings read before any file they point to (the vault reads
    # its password sources through it).
    ["ansible_cfg"],
    # Decryption, used wherever a file is read (inventory, variable files, env.yaml).
    ["vault"],
    ["inventory"],
    ["vars"],
    ["template"],
    ["transport"],
    ["steps"],  # the step kinds own their arguments; the playbook model is built from them
    ["playbook"],
    ["site"],
    # gpu: the manual's GPU chapter (the offline lint needs only `error`; what reads a cluster will
    # go through the site).
    ["plan", "procedures", "gpu"],
    ["report"],
    ["run"],
    ["cli", "adhoc", "keycopy"],  # adhoc, keycopy: commands before src/cli/ (for older trees)
    ["lib", "main"],
]
level = {m: i for i, ms in enumerate(LAYERS) for m in ms}

files = {}
for root, _, names in os.walk("src"):
    if root.startswith("src/bin"):
        continue
    for n in names:
        if not n.endswith(".rs"):
            continue
        p = os.path.join(root, n)
        mod = p[4:-3].replace("/", "::")
        if mod.endswith("::mod"):
            mod = mod[: -len("::mod")]
        files[mod] = p

def parent(mod):
    return mod.rsplit("::", 1)[0] if "::" in mod else ""

def expand_use(body):
    """`a::{b, c::{d as e}}` → [("a::b", "b"), ("a::c::d", "e")]: each path and the name it binds."""
    body = re.sub(r"\s+as\s+", "@", body)
    body = re.sub(r"\s+", "", body)
    def rec(prefix, s):
        items, depth, cur = [], 0, ""
        for ch in s:
            depth += (ch == "{") - (ch == "}")
            if ch == "," and depth == 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        items.append(cur)
        out = []
        for it in filter(None, items):
            if "{" in it:
                head, rest = it.split("{", 1)
                out += rec(prefix + head, rest[:-1])
            else:
                path, _, alias = it.partition("@")
                out.append((prefix + path, alias or path.rsplit("::", 1)[-1]))
        return out
    return rec("", body)

# `pub use child::item [as name]` in a module: a path through the re-export names the child.
reexports = {}
def scan_reexports():
    for mod, p in files.items():
        for m in re.finditer(r"\bpub use\s+([^;]+);", open(p).read()):
            for target, name in expand_use(m.group(1)):
                if target.startswith("crate::"):
                    target = target[len("crate::"):]
                elif target.startswith("super::"):
                    target = f"{parent(mod)}::{target[len('super::'):]}".strip(":")
                elif mod != "lib":
                    target = f"{mod}::{target}"
                reexports[(mod, name)] = target

def resolve(path, depth=0):
    """The module (file) a path names: its longest module prefix, through re-exports."""
    parts, rest = path.split("::"), []
    while parts:
        m = "::".join(parts)
        if m in files:
            if rest and (m, rest[0]) in reexports and depth < 8:
                return resolve(reexports[(m, rest[0])], depth + 1) or m
            return m
        rest.insert(0, parts.pop())
    return None

scan_reexports()
children = {}
for m in files:
    if "::" in m:
        children.setdefault(parent(m), []).append(m)
    elif m not in ("lib", "main"):
        children.setdefault("lib", []).append(m)
edges = {}
for mod, p in files.items():
    src = open(p).read()
    src = re.sub(r"(?m)//.*$", "", src)
    # Unit tests inside a file may reach anywhere; only the code counts.
    src = re.split(r"#\[cfg\(test\)\]", src)[0]
    targets = set()
    for m in re.finditer(r"\buse\s+(crate|super)::([^;]+);", src):
        base = "crate" if m.group(1) == "crate" else "super"
        for path, _ in expand_use(m.group(2)):
            path = re.sub(r"(::)?\bself$", "", path)
            if base == "super":
                path = f"{parent(mod)}::{path}".strip(":")
            targets.add(path)
    for m in re.finditer(r"(?<![\w:])crate::([A-Za-z_][\w:]*)", src):
        targets.add(m.group(1))
    for m in re.finditer(r"(?<![\w:])super::([A-Za-z_][\w:]*)", src):
        targets.add(f"{parent(mod)}::{m.group(1)}".strip(":"))
    # A parent naming its own children (`check::run(..)`, `use self::check::X`, `use check::X`).
    for child in children.get(mod, ()):
        name = child.rsplit("::", 1)[-1]
        if re.search(rf"(?<![\w:])(self::)?{name}::", src):
            targets.add(child)
    out = set()
    for t in targets:
        r = resolve(t)
        if r and r != mod:
            out.add(r)
    edges[mod] = out

def top(m):
    # The longest prefix LAYERS names (`transport::ssh` before `transport`, where a layer names one).
    parts = m.split("::")
    for n in range(len(parts), 0, -1):
        if "::".join(parts[:n]) in level:
            return "::".join(parts[:n])
    return parts[0]

def within(root, m):
    return m == root or m.startswith(root + "::")

def one_subtree(comp):
    # A parent module and its own descendants using each other is structure, not a circle: a
    # mod.rs re-exporting or calling its children, the children using their parent's types.
    return any(all(within(r, m) for m in comp) for r in comp)

# Circles, counted as a drawing of the rooms counts them: Tarjan's strongly connected components
# twice. Over every edge, a component is a circle unless it is one module and its own descendants
# (a circle that passes through a parent's children into another module, plan -> plan::check ->
# run -> plan, counts). Without the edges between a module and its own descendants, two siblings
# that use each other (include <-> roles) count too, where the first pass sees one subtree.
sys.setrecursionlimit(10000)
def components(skip_structural):
    idx, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    def strong(v):
        idx[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if skip_structural and (within(v, w) or within(w, v)):
                continue
            if w not in idx:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1 and not one_subtree(comp):
                out.append(sorted(comp))
    for v in sorted(files):
        if v not in idx:
            strong(v)
    return out
sccs = components(False)
for c in components(True):
    if not any(set(c) <= set(big) for big in sccs):
        sccs.append(c)

against = []
for a in sorted(edges):
    for b in sorted(edges[a]):
        la, lb = level.get(top(a)), level.get(top(b))
        if la is None or lb is None:
            against.append((a, b, "module not in LAYERS"))
        elif lb > la:
            against.append((a, b, f"layer {la} uses layer {lb}"))

n_edges = sum(len(v) for v in edges.values())
if "-v" in sys.argv:
    for a in sorted(edges):
        for b in sorted(edges[a]):
            print(f"{a} -> {b}")
print(f"modules (files): {len(files)}")
print(f"import edges: {n_edges}")
print(f"import circles: {len(sccs)}")
for c in sorted(sccs):
    print("  circle: " + " <-> ".join(c))
print(f"imports against the layering: {len(against)}")
for a, b, why in against:
    print(f"  {a} -> {b} ({why})")
# The gate (.ci/run): the house has no circle and nothing imports against the layering.
if sccs or against:
    print("imports.sh: the module graph must have no circle and no import against the layering "
          "(docs/DESIGN.md, Layout): move the shared code down, or the caller up", file=sys.stderr)
    sys.exit(1)
PY

"""Facts about kit's import graph, measured from the source (no import of kit): run `python tools/import_graph.py`.

* cycles: strongly connected sets of modules under `launcher/` (every `import`, top-level or inside a function);
* upward imports: an import from a lower layer to a higher one (LAYERS below, lowest first);
* backend names: string comparisons with a backend's name (`== "slurm"`, `in ("ssh", "slurm")`) and other literal
  backend names, outside `launcher/backends/`;
* private names: `from launcher.x import _name` or `x._name` across modules;
* what a new backend touches: files outside `launcher/backends/<name>/` that name a backend (the registry, ideally
  alone).

Exit code 1 when any of the first four is not zero (`--quiet` prints only the summary)."""

import argparse
import ast
import os
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "launcher"

# Lowest first. A module belongs to the longest prefix that matches; it may import its own layer and lower ones.
LAYERS = [
    ("base", ["launcher.errors", "launcher.states", "launcher.secrets", "launcher.hostinfo", "launcher.metadata_on_use",
              "launcher.backends.registry"]),
    ("spec", ["launcher.spec"]),
    ("model", ["launcher.planning.model"]),
    ("render", ["launcher.render"]),
    ("plan", ["launcher.planning", "launcher.environment"]),
    ("transport", ["launcher.transport"]),
    ("records", ["launcher.status", "launcher.records", "launcher.run_index"]),
    ("supervise", ["launcher.supervise", "launcher.preflight", "launcher.insight"]),
    ("backends", ["launcher.backends"]),
    ("launch", ["launcher.launch", "launcher.lookup", "launcher.waiting", "launcher.describe", "launcher.sweeps",
                "launcher.insight.run_report"]),
    ("api", ["launcher.api", "launcher.commands", "launcher"]),   # launcher/__init__.py: the API's face
    ("cli", ["launcher.cli", "launcher.__main__"]),
]


def modules() -> dict:
    """module name -> path, for every .py under launcher/."""
    found = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, PACKAGE)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                found[".".join(rel)] = path
    return found


def _resolve(name: str, mods: dict):
    """The launcher module an imported name lives in (a package's submodule if it is one), or None."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def imports(mod: str, path: str, mods: dict) -> list:
    """(imported launcher module, line, names imported) for each import statement of the module."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    is_pkg = path.endswith("__init__.py")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = _resolve(a.name, mods)
                if target:
                    out.append((target, node.lineno, ()))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = mod.split(".")
                parts = parts if is_pkg else parts[:-1]
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if not base.startswith(PACKAGE):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in mods:
                    out.append((sub, node.lineno, ()))
                else:
                    target = _resolve(base, mods)
                    if target:
                        out.append((target, node.lineno, (a.name,)))
    return out


def layer_of(mod: str) -> int:
    best, rank = -1, 0
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    return rank


def sccs(graph: dict) -> list:
    """Tarjan's strongly connected components with more than one module (or a self-import)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
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
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def backend_names(mods: dict) -> list:
    from importlib import util
    spec = util.spec_from_file_location("_registry", os.path.join(ROOT, "launcher", "backends", "registry.py"))
    if spec is None or not os.path.exists(spec.origin):
        return ["local", "ssh", "slurm"]
    registry = util.module_from_spec(spec)
    spec.loader.exec_module(registry)
    return sorted(registry.BACKENDS)


def name_uses(path: str, names: list) -> tuple:
    """(comparisons with a backend name, other literal backend names) as (line, text) lists."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    compared, literal, seen = [], [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for part in [node.left, *node.comparators]:
                consts = part.elts if isinstance(part, (ast.Tuple, ast.List, ast.Set)) else [part]
                for c in consts:
                    if isinstance(c, ast.Constant) and c.value in names:
                        compared.append((node.lineno, ast.unparse(node)))
                        seen.add(id(c))
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant) and node.value.value in names:
            compared.append((node.lineno, f"case {node.value.value!r}"))
            seen.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in seen:
            literal.append((node.lineno, repr(node.value)))
    return compared, literal


def private_uses(mod: str, path: str, mods: dict) -> list:
    out = []
    for target, line, names in imports(mod, path, mods):
        for n in names:
            if n.startswith("_") and not n.startswith("__") and target != mod:
                out.append((line, f"from {target} import {n}"))
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            for a in node.names:
                if f"{node.module}.{a.name}" in mods:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__") and aliases[node.value.id] != mod):
            out.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    args = p.parse_args(argv)
    mods = modules()
    graph, upward, private = defaultdict(set), [], []
    for mod, path in sorted(mods.items()):
        for target, line, _ in imports(mod, path, mods):
            if target == mod:
                continue
            graph[mod].add(target)
            if layer_of(target) > layer_of(mod):
                upward.append((mod, line, target))
        private += [(mod, line, text) for line, text in private_uses(mod, path, mods)]
    cycles = sccs(graph)
    names = backend_names(mods)
    compared, literal, touched = [], [], set()
    for mod, path in sorted(mods.items()):
        rel = os.path.relpath(path, ROOT)
        inside = rel.startswith(os.path.join("launcher", "backends") + os.sep)
        c, lit = name_uses(path, names)
        if not inside:
            compared += [(rel, line, text) for line, text in c]
            literal += [(rel, line, text) for line, text in lit]
            if c or lit:
                touched.add(rel)
        elif not any(rel.startswith(os.path.join("launcher", "backends", n) + os.sep) for n in names) and (c or lit):
            touched.add(rel)   # backends/registry.py and friends: outside every backend's own subpackage
    if not args.quiet:
        for comp in cycles:
            print("cycle:", " -> ".join(comp))
        for mod, line, target in upward:
            print(f"upward: {mod}:{line} imports {target} ({LAYERS[layer_of(mod)][0]} -> "
                  f"{LAYERS[layer_of(target)][0]})")
        for rel, line, text in compared:
            print(f"backend name compared: {rel}:{line}: {text}")
        for rel, line, text in literal:
            print(f"backend name literal: {rel}:{line}: {text}")
        for mod, line, text in private:
            print(f"private name: {mod}:{line}: {text}")
        for rel in sorted(touched):
            print(f"a new backend touches: {rel}")
    print(f"modules {len(mods)}; import cycles {len(cycles)}; upward imports {len(upward)}; backend-name "
          f"comparisons outside backends/ {len(compared)} (other literal names {len(literal)}); private names "
          f"across modules {len(private)}; files a new backend touches outside its subpackage {len(touched)}")
    return 1 if cycles or upward or compared or private else 0


if __name__ == "__main__":
    sys.exit(main())

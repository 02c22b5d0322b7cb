"""Facts about kit's import graph, measured from the source (no import of kit): run `python tools/import_graph.py`.

* cycles: strongly connected sets of modules under `launcher/` (every `import`, top-level or inside a function);
* upward imports: an import from a lower layer to a higher one (LAYERS below, lowest first);
* backend names: string comparisons with a backend's name (`== "slurm"`, `in ("ssh", "slurm")`) and other literal
  backend names, outside `launcher/backends/`;
* private names: `from launcher.x import _name` or `x._name` across modules;
* imports into a backend: a module outside `launcher/backends/<name>/` that imports from it (the registry finds a
  backend's parts by name, through its entry point, and imports nothing of it statically);
* imports of the CLI: a module other than `launcher/cli.py` (and `launcher/commands/` itself) that imports
  `launcher/commands/`, and the two faces importing each other (`launcher/api.py` and `launcher/commands/`);
* what a new backend touches: files under `launcher/` outside `launcher/backends/<name>/` that name a backend (none:
  a backend is its subpackage and its entry point in pyproject.toml).

The backends are the `kit.backends` entry points in pyproject.toml. Exit code 1 when any of the first six is not
zero (`--quiet` prints only the summary)."""

import argparse
import ast
import os
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "launcher"

# Lowest first. A module belongs to the longest prefix that matches; it may import its own layer and lower ones.
LAYERS = [
    (
        "base",
        [
            "launcher.errors",
            "launcher.logs",
            "launcher.states",
            "launcher.secrets",
            "launcher.metadata_on_use",
            "launcher.backends.registry",
            "launcher.backends.warmup",
            "launcher.wellformed",
        ],
    ),
    ("spec", ["launcher.spec"]),
    ("model", ["launcher.planning.model"]),
    ("render", ["launcher.render"]),
    ("plan", ["launcher.planning", "launcher.environment"]),
    ("transport", ["launcher.transport"]),
    ("records", ["launcher.status", "launcher.records", "launcher.run_index", "launcher.filestore", "launcher.trust"]),
    ("supervise", ["launcher.supervise", "launcher.preflight", "launcher.insight"]),
    ("backends", ["launcher.backends"]),
    ("core", ["launcher.core"]),  # load -> plan -> launch -> follow, for both faces
    ("sweeps", ["launcher.sweeps"]),  # many runs through the core
    # The two faces, side by side (FACES: neither imports the other); launcher/__init__.py is the API's.
    ("faces", ["launcher.api", "launcher.commands", "launcher"]),
    ("cli", ["launcher.cli", "launcher.__main__"]),
]
FACES = ("launcher.api", "launcher.commands")
CLI = "launcher.cli"


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
                parts = parts[: len(parts) - node.level + 1]
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


def entry_points() -> dict:
    """name -> package of the `kit.backends` entry points pyproject.toml declares."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    return dict(project.get("entry-points", {}).get("kit.backends", {}))


REGISTRY = os.path.join("launcher", "backends", "registry.py")


def default_backend() -> str:
    """The registry's DEFAULT: the backend of the cluster kit uses without --cluster (not a table of backends)."""
    tree = ast.parse(open(os.path.join(ROOT, REGISTRY), encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["DEFAULT"]:
            return node.value.value
    return ""


def backend_names(mods: dict) -> list:
    return sorted(entry_points())


def _within(mod: str, package: str) -> bool:
    return mod == package or mod.startswith(package + ".")


def into_backends(mod: str, target: str, packages: list) -> bool:
    """An import of a backend's subpackage from outside it."""
    return any(_within(target, p) and not _within(mod, p) for p in packages)


def of_the_cli(mod: str, target: str) -> bool:
    """An import of the CLI's commands from outside cli.py and commands/, or between the two faces."""
    face = next((f for f in FACES if _within(mod, f)), None)
    other = next((f for f in FACES if _within(target, f)), None)
    if other == "launcher.commands" and mod != CLI and face != other:
        return True
    return face is not None and other is not None and face != other


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
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and aliases[node.value.id] != mod
        ):
            out.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    args = p.parse_args(argv)
    mods = modules()
    packages = [p for p in entry_points().values() if p in mods]
    graph, upward, private, into, cli = defaultdict(set), [], [], [], []
    for mod, path in sorted(mods.items()):
        for target, line, _ in imports(mod, path, mods):
            if target == mod:
                continue
            graph[mod].add(target)
            if layer_of(target) > layer_of(mod):
                upward.append((mod, line, target))
            if into_backends(mod, target, packages):
                into.append((mod, line, target))
            if of_the_cli(mod, target):
                cli.append((mod, line, target))
        private += [(mod, line, text) for line, text in private_uses(mod, path, mods)]
    cycles = sccs(graph)
    names = backend_names(mods)
    compared, literal, touched = [], [], set()
    for _mod, path in sorted(mods.items()):
        rel = os.path.relpath(path, ROOT)
        inside = rel.startswith(os.path.join("launcher", "backends") + os.sep)
        c, lit = name_uses(path, names)
        if not inside:
            compared += [(rel, line, text) for line, text in c]
            literal += [(rel, line, text) for line, text in lit]
            if c or lit:
                touched.add(rel)
        elif not any(rel.startswith(os.path.join("launcher", "backends", n) + os.sep) for n in names) and (c or lit):
            if rel != REGISTRY or c or any(text != repr(default_backend()) for _, text in lit):
                touched.add(rel)  # outside every backend's own subpackage; the registry may name the default
    if not args.quiet:
        for comp in cycles:
            print("cycle:", " -> ".join(comp))
        for mod, line, target in upward:
            print(
                f"upward: {mod}:{line} imports {target} ({LAYERS[layer_of(mod)][0]} -> {LAYERS[layer_of(target)][0]})"
            )
        for rel, line, text in compared:
            print(f"backend name compared: {rel}:{line}: {text}")
        for rel, line, text in literal:
            print(f"backend name literal: {rel}:{line}: {text}")
        for mod, line, text in private:
            print(f"private name: {mod}:{line}: {text}")
        for mod, line, target in into:
            print(f"import into a backend: {mod}:{line} imports {target}")
        for mod, line, target in cli:
            print(f"import of the CLI: {mod}:{line} imports {target}")
        for rel in sorted(touched):
            print(f"a new backend touches: {rel}")
    print(
        f"modules {len(mods)}; import cycles {len(cycles)}; upward imports {len(upward)}; backend-name "
        f"comparisons outside backends/ {len(compared)} (other literal names {len(literal)}); private names "
        f"across modules {len(private)}; imports into a backend from outside it {len(into)}; imports of the CLI "
        f"outside cli.py or between the faces {len(cli)}; files a new backend touches outside its subpackage "
        f"{len(touched)} (and its entry point in pyproject.toml)"
    )
    return 1 if cycles or upward or compared or private or into or cli else 0


if __name__ == "__main__":
    sys.exit(main())

"""The job's own code as this machine sees it (a local workdir, an SSH cluster's sync source): the entrypoint's file,
compiled, and the files of the modules it imports from that directory, found with `ast` (nothing is imported)."""

import ast
import os
from dataclasses import dataclass
from typing import Iterator, Optional

from launcher.errors import KitError

MAX_FILES = 500  # the user's own modules followed from the entrypoint; a bound on the work, not a limit on code


@dataclass(frozen=True)
class Source:
    """One file of the job's code: its path relative to the code directory, how python names it, its text."""

    rel: str
    module: Optional[str]  # None for the entrypoint script
    text: str
    tree: ast.Module


def entry_file(code_dir: str, script: Optional[str], module: Optional[str]) -> Optional[str]:
    """The file the node runs, relative to `code_dir` (or absolute, for a script given so); None for a module
    that is not a file there (it may be installed on the nodes)."""
    if script is not None:
        return script
    assert module is not None  # an entrypoint is a script or a module (spec/job.py)
    return module_file(code_dir, [code_dir], module, run=True)


def module_file(code_dir: str, search: list[str], name: str, run: bool = False) -> Optional[str]:
    """The file of module `name` found under the directories `search` (its package's `__init__.py`; with `run`,
    a package's `__main__.py`, as `python -m` runs it), relative to `code_dir`; None when it is not there."""
    parts = name.split(".")
    for top in search:
        base = os.path.join(top, *parts)
        found = [base + ".py", os.path.join(base, "__main__.py" if run else "__init__.py")]
        for path in found:
            if os.path.isfile(path):
                return os.path.relpath(path, code_dir)
    return None


def compile_file(code_dir: str, rel: str, module: Optional[str], role: str, full: bool = True) -> Source:
    """The file parsed and (`full`) compiled as python would (its coding line honoured): the compile finds the
    few errors a parse does not (`return` outside a function), at several times its cost. A syntax error is one
    line with the file and line, as the user named the file, and what it is to the job (`role`)."""
    with open(os.path.join(code_dir, rel), "rb") as f:
        data = f.read()
    try:
        tree = ast.parse(data, rel)
        if full:
            compile(tree, rel, "exec", dont_inherit=True)
    except SyntaxError as e:
        where = f"{rel}:{e.lineno}" if e.lineno else rel
        raise KitError(f"{where}: SyntaxError: {e.msg} ({role}); fix it before submitting") from None
    except ValueError as e:  # a null byte: python refuses the file as well
        raise KitError(f"{rel}: {e} ({role}); fix it before submitting") from None
    return Source(rel, module, data.decode("utf-8", "replace"), tree)


def imported_names(source: Source) -> list[str]:
    """The absolute module names the file imports (every `import x.y` / `from x.y import z`, anywhere in it; `z`
    too, which may be a submodule), relative imports made absolute within the file's package."""
    package = _package_of(source)
    names = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue  # a relative import in a script: python refuses it at run time
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base:
                names.append(base)
                names += [f"{base}.{a.name}" for a in node.names if a.name != "*"]
    return names


def _package_of(source: Source) -> Optional[str]:
    if source.module is None:
        return None
    if os.path.basename(source.rel) in ("__init__.py", "__main__.py"):
        return source.module
    return source.module.rpartition(".")[0] or None


def local_modules(code_dir: str, entry: Source, search: list[str]) -> Iterator[Source]:
    """Every module the entrypoint imports, directly or through another such module, that is a file under
    `search` (the directories python looks in first: the script's own, or the workdir for `-m`); each package on a
    dotted name's way counts (`a/__init__.py` for `a.b`). Breadth first, each parsed as it is reached (a caller
    may stop early), not compiled: their imports are what is wanted, and python reports their errors itself."""
    todo, seen, count = [entry], {entry.rel}, 0
    while todo and count < MAX_FILES:
        source = todo.pop(0)
        for name in imported_names(source):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                rel = module_file(code_dir, search, prefix)
                if rel is None or rel in seen:
                    continue
                seen.add(rel)
                try:
                    module = compile_file(code_dir, rel, prefix, f"imported by the job as {prefix}", full=False)
                except OSError:
                    continue
                count += 1
                todo.append(module)
                yield module

"""Every module kit's code imports from another distribution (launcher/, train/, tests/, bench/, tools/) is declared
in pyproject.toml: a dependency for what the launcher imports, the `train` extra for what only the reference job
(train/) adds, the `test` extra (which pulls in `train`) for what only the tests and benchmarks use."""

import ast
import importlib.metadata
import os
import re
import sys
import tomllib

from tests.launcher.localrun import REPO

OWN = {"launcher", "train", "tests", "bench", "kit", "kit_echo_backend", "kit_subprocess_backend", "watchdog_output",
       "helper_builds_accelerator", "ngram_baseline", "ssh_fanout", "scale"}  # bench/ modules imported by their neighbours from bench/ on sys.path


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported(top: str) -> dict:
    """top-level module -> a file that imports it, for modules outside the standard library and kit's own."""
    found = {}
    for dirpath, _, files in os.walk(os.path.join(REPO, top)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
                    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                        [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else []
                    for module in modules:
                        root = module.split(".")[0]
                        if root not in sys.stdlib_module_names and root not in OWN:
                            found.setdefault(root, os.path.relpath(path, REPO))
    return found


def test_every_import_is_declared():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    extras = project["optional-dependencies"]
    runtime = {_name(r) for r in project["dependencies"]}
    train = runtime | {_name(r) for r in extras["train"]}
    assert "kit-launcher[train]" in extras["test"], "the test extra pulls in the train extra: the tests train"
    test = train | {_name(r) for r in extras["test"]}
    dists = importlib.metadata.packages_distributions()
    missing = []
    for top, declared in (("launcher", runtime), ("kit", runtime), ("train", train), ("tests", test),
                          ("bench", test), ("tools", test)):
        for module, where in _imported(top).items():
            names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
            if not names & declared:
                missing.append(f"{module} ({where}; distribution {', '.join(sorted(names))})")
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(sorted(missing))

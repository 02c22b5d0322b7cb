"""Is the entrypoint there, as the node will see it? One check command (shell text) and one function that reads
its result, so the local backend runs it here and a remote backend can run the same text on each host; and how
kit reads the marked lines its check programs print (`kit-probe:python ...`)."""

import shlex
from dataclasses import dataclass
from typing import NamedTuple, Optional

from launcher.planning.model import NodePlan
from launcher.render.shell import join_argv

# Reading the marked lines that kit's check programs print on a host (`kit-probe:python ...`).


def after_marker(text: str, marker: str) -> list[str]:
    """What follows `marker` on each line of `text` that holds it. The marker is looked for anywhere in a line:
    a host may print text without a newline before the program's first line (an rc file of the login shell, a
    setup line), which then starts that line."""
    return [line[line.index(marker) + len(marker) :] for line in text.splitlines() if marker in line]


MARKER = "kit-preflight:"
# The reference job's module (jobs/bert_cls.yaml): the repository's train/, found from the nodes' workdir only.
REFERENCE_MODULE = "train"

# Runs under the node's own interpreter in its workdir. Finds modules without importing them (no torch import
# from a package __init__): the top level through the interpreter's finders, submodules through the parent's path.
CHECK_SOURCE = f"""\
import os, sys
def find(name):   # importlib.util only for a module (~3 ms of CPU at each start; an SSH host pays it)
    import importlib.machinery, importlib.util
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    for part in parts[1:]:
        if spec is None or spec.submodule_search_locations is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(part, list(spec.submodule_search_locations))
    return spec
def module_state(name):
    spec = find(name)
    if spec is None:
        return "missing"
    if spec.submodule_search_locations is not None and find(name + ".__main__") is None:
        return "no-main"
    return "found"
kind, target = sys.argv[1], sys.argv[2]
state = ("found" if os.path.isfile(target) else "missing") if kind == "script" else module_state(target)
print("{MARKER}" + state)
"""


@dataclass(frozen=True)
class CheckResult:
    returncode: int
    stdout: str
    stderr: str


class EntrypointRef(NamedTuple):
    """A job's entrypoint as the checks read it: plain data, which pickles without the schemas."""

    module: Optional[str]
    script: Optional[str]


def entrypoint_target(entrypoint) -> tuple[str, str]:
    return ("module", entrypoint.module) if entrypoint.module is not None else ("script", entrypoint.script)


def entrypoint_check_command(node: NodePlan, entrypoint, runtime_vars: tuple[str, ...] = ()) -> str:
    """The node's own command with its launch line swapped for the check: same cd, setup lines, exported env
    and interpreter (the plan's python), so a failing setup line shows up here too."""
    # Cut the exact launch text, not at the last newline: a quoted argument may hold newlines.
    launch = "exec " + join_argv(node.argv, runtime_vars) + "\n"
    if not node.command.endswith(launch):
        raise ValueError(f"node {node.machine_rank}: command does not end with its launch line")
    kind, target = entrypoint_target(entrypoint)
    return node.command[: -len(launch)] + f"exec {join_argv((node.argv[0], '-c', CHECK_SOURCE, kind, target))}\n"


def interpret_entrypoint_check(entrypoint, node: NodePlan, result: CheckResult, where: str) -> Optional[str]:
    """None when the entrypoint is there; else one line saying what is wrong. `where` names the node's workdir
    as seen from the node (an absolute path for a local run, host:workdir for a remote one)."""
    kind, target = entrypoint_target(entrypoint)
    states = after_marker(result.stdout, MARKER)
    if states == ["found"]:
        return None
    if states == ["missing"] and kind == "script":
        return (
            f"entrypoint.script {target}: no such file in the node's workdir {where}; "
            f"a relative script path is taken from the workdir"
        )
    if states == ["missing"] and target == REFERENCE_MODULE:
        return (
            f"entrypoint.module {target}: not importable by {node.argv[0]} in {where} (no such module); the "
            f"reference job's module is the top-level train/ of kit's repository, which installing kit does not "
            f"install: run kit from a clone of it, or make the cluster's workdir one"
        )
    if states == ["missing"]:
        return (
            f"entrypoint.module {target}: not importable by {node.argv[0]} in {where} (no such module); "
            f"check the name, or install it / add it to PYTHONPATH"
        )
    if states == ["no-main"]:
        return f"entrypoint.module {target}: a package without __main__.py cannot be run with -m; name a module"
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    setup = [line for line in lines if line.startswith("kit: node setup failed")]
    if setup:
        return f"{setup[-1].removeprefix('kit: ')} (in the node's workdir {where})"
    last = lines[-1] if lines else "no output"
    return (
        f"preflight: checking the entrypoint with {shlex.quote(node.argv[0])} failed (exit {result.returncode}): {last}"
    )

"""The modules a node's launch needs from its Python (accelerate and torch for `accelerate launch`, torch for
torchrun and a one-process node, deepspeed for strategy deepspeed), and the check that the interpreter finds them:
`importlib.util.find_spec` only, nothing imported (torch costs seconds). One text, run by the SSH checks
(backends/ssh/preflight.py), by each SLURM task before its launcher (the plan's check_modules.py) and by
`kit doctor`; a missing module is one line naming the interpreter and the fix."""

import shlex

from launcher.render.shell import quote_word

# Standard library only: it runs under the node's interpreter, before anything of the job's.
SOURCE = r'''
import importlib.util as _kit_util


def kit_missing(names):
    """The names among `names` this interpreter cannot import: no spec, or only an empty directory of that name
    (a namespace package, which no real install of these is)."""
    missing = []
    for name in names:
        try:
            spec = _kit_util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or spec.origin is None:
            missing.append(name)
    return missing


def kit_no_module(python, missing):
    """The problem, worded for a person: which interpreter lacks what, and the fix."""
    s, it = ("s", "them") if len(missing) > 1 else ("", "it")
    return (f"{python} has no module{s} {', '.join(missing)} (pip install {' '.join(missing)} there, or point "
            f"the cluster config's python: or setup: at an environment that has {it})")
'''

# The plan's check_modules.py on a task: `check_modules.py NODE MODULE...`, exit 2 with one line on stderr.
MAIN = """

if __name__ == "__main__":
    import os, sys
    missing = kit_missing(sys.argv[2:])
    if missing:
        host = os.environ.get("SLURMD_NODENAME") or os.uname()[1]
        print(f"kit: node {sys.argv[1]} ({host}): {kit_no_module(sys.executable, missing)}", file=sys.stderr,
              flush=True)
        sys.exit(2)
"""


def required(argv: tuple, strategy: str) -> tuple[str, ...]:
    """What the node's launch `argv` (python -m LAUNCHER ...) imports before the job's own code runs."""
    launcher = argv[2] if len(argv) > 2 and argv[1] == "-m" else ""
    names = ["accelerate", "torch"] if launcher.startswith("accelerate.") else ["torch"]
    return tuple(names + (["deepspeed"] if strategy == "deepspeed" else []))


def probe_lines(marker: str, modules: tuple) -> str:
    """Python lines (after SOURCE) that print, after `marker`, `missing` and the problem when a module is missing,
    for a backend's checks that run under the node's interpreter."""
    return (
        f"_kit_missing = kit_missing({tuple(modules)!r})\n"
        f"if _kit_missing:\n"
        f"    print({marker!r} + 'missing', kit_no_module(sys.executable, _kit_missing), flush=True)\n"
    )


def program() -> str:
    """The text of the plan's check_modules.py."""
    return SOURCE.lstrip("\n") + MAIN


def file_name(run_dir: str) -> str:
    return f"{run_dir}/check_modules.py"


def task_line(python: str, run_dir: str, node_word: str, modules: tuple, runtime_vars: tuple) -> str:
    """The node command's line that checks the interpreter before the launcher (a SLURM task): a module missing
    ends the task with exit 2 and the program's line; an interpreter not found (a typo in python: or in the setup
    that puts it on PATH), with exit 127 and a line saying so."""
    py, node = shlex.quote(python), quote_word(node_word, runtime_vars)
    words = [py, shlex.quote(file_name(run_dir)), node, *map(shlex.quote, modules)]
    said = shlex.quote(
        "kit: node %s (%s): python %s not found after the setup lines; fix python: or setup: in the cluster config\\n"
    )
    return (
        " ".join(words)
        + ' || { kit_code=$?; [ "$kit_code" != 127 ] || printf '
        + said
        + f' {node} "${{SLURMD_NODENAME:-$(hostname)}}" {py} >&2; exit "$kit_code"; }}'
    )


__all__ = ["SOURCE", "required", "probe_lines", "program", "file_name", "task_line"]

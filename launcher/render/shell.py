"""Shell text for a node: every word quoted, only declared runtime variables left to expand."""

import re
import shlex

from launcher.secrets import is_secret_name

_RUNTIME_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def runtime_ref(name: str) -> str:
    """The argv word for a value the node's own shell resolves (e.g. $SLURM_NODEID)."""
    return "${" + name + "}"


def quote_word(word: str, runtime_vars: tuple[str, ...] = ()) -> str:
    m = _RUNTIME_REF.match(word)
    if m and m.group(1) in runtime_vars:
        return f'"{word}"'
    return shlex.quote(word)


def join_argv(argv, runtime_vars: tuple[str, ...] = ()) -> str:
    return " ".join(quote_word(w, runtime_vars) for w in argv)


def node_command(
    workdir: str,
    setup: tuple[str, ...],
    env: dict[str, str],
    argv: tuple[str, ...],
    runtime_vars: tuple[str, ...] = (),
    prelude: tuple[str, ...] = (),
) -> str:
    """The script a node runs with `bash -c`. Secret-named variables are left out: backends deliver them
    out of band so they never appear in a command line, a batch script or a log."""
    lines = [f"cd {shlex.quote(workdir)}", *prelude, *setup]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items()) if not is_secret_name(k)]
    lines.append("exec " + join_argv(argv, runtime_vars))
    return "\n".join(lines) + "\n"

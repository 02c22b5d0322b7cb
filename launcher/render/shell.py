"""Shell text for a node: every word quoted, only declared runtime variables left to expand."""

import re
import shlex

from launcher.secrets import is_secret

_RUNTIME_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")

# Checks the step just run. Not `set -e`: that would also fire inside sourced activate scripts and user setup.
# A failed `cd` or setup line stops the node with one line on stderr, instead of launching in the wrong place.
SETUP_CHECK = "kit_setup_check"
SETUP_CHECK_DEF = (
    f"{SETUP_CHECK}() {{ [ \"$1\" = 0 ] || {{ printf 'kit: node setup failed (exit %s): %s\\n' \"$1\" \"$2\" >&2; "
    "exit \"$1\"; }; }"
)


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


def checked(line: str) -> list[str]:
    """The line, then a check of its exit status on a line of its own (so a trailing `# comment` cannot
    swallow it); the message names the line's first line."""
    first = line.strip().split("\n", 1)[0] + (" ..." if "\n" in line.strip() else "")
    return [line, f"{SETUP_CHECK} $? {shlex.quote(first)}"]


def node_command(
    workdir: str,
    setup: tuple[str, ...],
    env: dict[str, str],
    argv: tuple[str, ...],
    runtime_vars: tuple[str, ...] = (),
    prelude: tuple[str, ...] = (),
    secret_env: tuple[str, ...] = (),
) -> str:
    """The script a node runs with `bash -c`. Secrets (secret-looking names and every `secret_env` name) are
    left out: backends deliver them out of band so they never appear in a command line, a batch script or a log."""
    lines = [SETUP_CHECK_DEF, *checked(f"cd {shlex.quote(workdir)}"), *prelude]
    for line in setup:
        lines += checked(line)
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items()) if not is_secret(k, secret_env)]
    lines.append("exec " + join_argv(argv, runtime_vars))
    return "\n".join(lines) + "\n"

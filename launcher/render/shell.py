"""Shell text for a node: every word quoted, only declared runtime variables left to expand."""

import re
import shlex

from launcher.secrets import is_secret

_RUNTIME_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_DOUBLE_QUOTE_SPECIAL = re.compile(r'[$`"\\]')

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
    """One shell word. A word holding `${NAME}` of a declared runtime variable goes in double quotes with every
    other `$`, `` ` ``, `"` and `\\` escaped, so only that variable expands: `"runs/r/node${SLURM_NODEID}.ranks"`.
    Any other word is single-quoted as needed and expands nothing."""
    refs = [m for m in _RUNTIME_REF.finditer(word) if m.group(1) in runtime_vars]
    if not refs:
        return shlex.quote(word)
    parts, start = [], 0
    for m in refs:
        parts += [_DOUBLE_QUOTE_SPECIAL.sub(r"\\\g<0>", word[start:m.start()]), m.group(0)]
        start = m.end()
    parts.append(_DOUBLE_QUOTE_SPECIAL.sub(r"\\\g<0>", word[start:]))
    return '"' + "".join(parts) + '"'


def join_argv(argv, runtime_vars: tuple[str, ...] = (), literal_tail: int = 0) -> str:
    """The argv as shell text; the last `literal_tail` words (the job's own arguments) never expand anything."""
    cut = len(argv) - literal_tail
    return " ".join(quote_word(w, runtime_vars if i < cut else ()) for i, w in enumerate(argv))


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
    job_args: int = 0,
    runtime_env: tuple[str, ...] = (),
) -> str:
    """The script a node runs with `bash -c`. Secrets (secret-looking names and every `secret_env` name) are
    left out: backends deliver them out of band so they never appear in a command line, a batch script or a log.

    Runtime variables expand only in kit's own words: the argv before the job's `job_args` arguments, and the
    values of the `runtime_env` variables. The job's arguments and env values reach the node unchanged."""
    lines = [SETUP_CHECK_DEF, *checked(f"cd {shlex.quote(workdir)}"), *prelude]
    for line in setup:
        lines += checked(line)
    lines += [f"export {k}={quote_word(v, runtime_vars if k in runtime_env else ())}"
              for k, v in sorted(env.items()) if not is_secret(k, secret_env)]
    lines.append("exec " + join_argv(argv, runtime_vars, job_args))
    return "\n".join(lines) + "\n"

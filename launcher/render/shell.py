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
    f'{SETUP_CHECK}() {{ [ "$1" = 0 ] || {{ printf \'kit: node setup failed (exit %s): %s\\n\' "$1" "$2" >&2; '
    'exit "$1"; }; }'
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
        parts += [_DOUBLE_QUOTE_SPECIAL.sub(r"\\\g<0>", word[start : m.start()]), m.group(0)]
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


def threads_lines(procs_per_node: int) -> tuple[str, ...]:
    """Shell lines that size each process's CPU threads from the node's own cores (nproc: its affinity, so a
    SLURM task's allocation) split among the node's processes, unless OMP_NUM_THREADS is set already. accelerate
    takes OMP_NUM_THREADS as --num_cpu_threads_per_process (and prints no 3-line warning about guessing it)."""
    return (
        f"kit_threads=$(( $(nproc 2>/dev/null || echo 1) / {int(procs_per_node)} )); "
        '[ "$kit_threads" -ge 1 ] || kit_threads=1',
        'export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$kit_threads}"',
    )


def interface_lines(master: str, runtime_vars: tuple[str, ...], choice: str) -> tuple[str, ...]:
    """Shell lines that pick, on the node at start, the network interface gloo and NCCL use: the one the route to
    the master takes (the one holding the master's address, on the master itself), exported as GLOO_SOCKET_IFNAME
    and NCCL_SOCKET_IFNAME unless they are set already (the job's or cluster's env wins). `choice`: "auto", an
    interface name (exported as is), or "none" (nothing chosen: the libraries' own default)."""
    if choice == "none":
        return ()
    if choice != "auto":
        name = shlex.quote(choice)
        return (
            f'export GLOO_SOCKET_IFNAME="${{GLOO_SOCKET_IFNAME:-{name}}}" '
            f'NCCL_SOCKET_IFNAME="${{NCCL_SOCKET_IFNAME:-{name}}}"',
        )
    addr = quote_word(master, runtime_vars)
    return (
        f"kit_master_ip=$(getent ahostsv4 {addr} 2>/dev/null | awk 'NR==1 {{print $1}}')",
        'kit_ifname=$(ip -o route get "${kit_master_ip:-0.0.0.0}" 2>/dev/null | '
        "awk '{for (i = 1; i < NF; i++) if ($i == \"dev\") {print $(i + 1); exit}}')",
        # On the master itself the route to its own address is `local ... dev lo`: its interface holds the address.
        'if [ "$kit_ifname" = lo ] && [ "$kit_master_ip" != 127.0.0.1 ]; then kit_ifname=$(ip -o -4 addr show '
        '| awk -v ip="$kit_master_ip" \'index($4, ip "/") == 1 {print $2; exit}\'); fi',
        'if [ -n "$kit_ifname" ]; then export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-$kit_ifname}" '
        'NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-$kit_ifname}"; fi',
    )


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
    before_exec: tuple[str, ...] = (),
) -> str:
    """The script a node runs with `bash -c`. Secrets (secret-looking names and every `secret_env` name) are
    left out: backends deliver them out of band so they never appear in a command line, a batch script or a log.

    Runtime variables expand only in kit's own words: the argv before the job's `job_args` arguments, and the
    values of the `runtime_env` variables. The job's arguments and env values reach the node unchanged.
    `before_exec`: lines run in the node's environment right before its launcher (the SLURM env check)."""
    lines = [SETUP_CHECK_DEF, *checked(f"cd {shlex.quote(workdir)}"), *prelude]
    for line in setup:
        lines += checked(line)
    lines += [
        f"export {k}={quote_word(v, runtime_vars if k in runtime_env else ())}"
        for k, v in sorted(env.items())
        if not is_secret(k, secret_env)
    ]
    lines += before_exec
    lines.append("exec " + join_argv(argv, runtime_vars, job_args))
    return "\n".join(lines) + "\n"

"""The tags on output lines: torchrun tags each worker line [nodeN/rankR]; kit tags a launcher's own lines [nodeN].

One definition for the plan (which sets torchrun's template) and the backends (which add the node tag only to
lines that carry neither). R is the worker's global rank, on every backend.
"""

# torchrun reads its per-line prefix template from this variable (with `--tee`, it prefixes every worker line).
WORKER_TAG_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"


# A progress redraw is a whole line that starts with this mark (ANSI "cursor to column 1", so a raw terminal
# draws it in place too). Not "\r": torchrun's tee reads the ranks' files in text mode, where "\r" ends a line,
# and every redraw became an empty tagged line and a new one. The watchdog (self-contained) and the training
# module (kit-free) spell the same bytes; tests hold them equal.
PROGRESS_MARK = "\x1b[1G"


def split_progress(line: str):
    """(tag, text) when the line is a progress redraw: its text after the tag starts with the mark (or, from a
    program that is not under torchrun, a carriage return)."""
    tag, sep, rest = line.partition("] ")
    if not (sep and line.startswith("[node")):
        tag, sep, rest = "", "", line
    if rest.startswith((PROGRESS_MARK, "\r")):
        return tag + sep, rest.removeprefix(PROGRESS_MARK).lstrip("\r")
    return None


def node_tag(node: int) -> str:
    return f"[node{node}]"


def worker_tag_template(node) -> str:
    """`node`: a number, or on SLURM the runtime word ${SLURM_NODEID} that each task's shell expands.
    ${rank} is torchrun's template field, filled per worker; it is never a shell variable."""
    return f"[node{node}/rank${{rank}}] "


def is_tagged(line: str, node: int) -> bool:
    return line.startswith((node_tag(node), worker_tag_template(node).split("$", 1)[0]))

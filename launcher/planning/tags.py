"""The tags on output lines: torchrun tags each worker line [nodeN/rankR]; kit tags a launcher's own lines [nodeN].

One definition for the plan (which sets torchrun's template) and the backends (which add the node tag only to
lines that carry neither). R is the worker's global rank, on every backend.
"""

# torchrun reads its per-line prefix template from this variable (with `--tee`, it prefixes every worker line).
WORKER_TAG_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"


def node_tag(node: int) -> str:
    return f"[node{node}]"


def worker_tag_template(node) -> str:
    """`node`: a number, or on SLURM the runtime word ${SLURM_NODEID} that each task's shell expands.
    ${rank} is torchrun's template field, filled per worker; it is never a shell variable."""
    return f"[node{node}/rank${{rank}}] "


def is_tagged(line: str, node: int) -> bool:
    return line.startswith((node_tag(node), worker_tag_template(node).split("$", 1)[0]))

"""The tags on output lines: torchrun tags each worker line [nodeN/rankR]; kit tags a launcher's own lines [nodeN].

One definition for the plan (which sets torchrun's template) and the backends (which add the node tag only to
lines that carry neither).
"""


def node_tag(node: int) -> str:
    return f"[node{node}]"


def worker_tag_template(node: int) -> str:
    # ${rank} is torchrun's template field, filled per worker; it is not a shell variable.
    return f"[node{node}/rank${{rank}}] "


def is_tagged(line: str, node: int) -> bool:
    return line.startswith((node_tag(node), worker_tag_template(node).split("$", 1)[0]))

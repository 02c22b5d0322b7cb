"""Command-line overrides (`--nodes`, `--set key=value`) applied to validated specs, purely."""

from dataclasses import dataclass
from typing import Any, Optional

import yaml

from launcher.errors import KitError, Option
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.load import validate


@dataclass(frozen=True)
class Overrides:
    nodes: Optional[int] = None
    gpus: Optional[int] = None
    procs_per_node: Optional[int] = None
    strategy: Optional[str] = None
    mixed_precision: Optional[str] = None
    master_port: Optional[int] = None
    # `--set a.b=value`: job fields, or cluster fields as `cluster.a.b=value`.
    sets: tuple[str, ...] = ()
    # Arguments appended to the job's own (`kit submit JOB -- ARGS`, the API's args=[...]).
    extra_args: tuple[str, ...] = ()


def parse_set(item: str) -> tuple[str, Any]:
    """(dotted key, value) of `--set key=value`; `args=--lr 3e-4` and `args+=--resume no` take shell words, and
    `args+=` (a key ending in +) appends to the list instead of replacing it."""
    key, sep, raw = item.partition("=")
    if not sep or not key.rstrip("+") or any(not part for part in key.rstrip("+").split(".")):
        raise KitError(
            Option("set", item, quoted=True), ": expected key=value, e.g. ", Option("set", "deepspeed.zero_stage=3")
        )
    path = key.split(".")
    if len(path) >= 2 and path[-2] == "env":
        # Environment values are text: `--set env.OMP_NUM_THREADS=4` means the string "4".
        return key, raw
    if key.rstrip("+") == "args" and not raw.lstrip().startswith("["):
        return key, _words(raw, item)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def _words(raw: str, item: str) -> list[str]:
    import shlex

    try:
        return shlex.split(raw)
    except ValueError as e:
        raise KitError(Option("set", item, quoted=True), f": {e}; quote the arguments as a shell would") from None


def _key_value(data: dict, dotted: str):
    value: Any = data
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def with_key(data: dict, dotted: str, value) -> dict:
    """A copy of `data` with `dotted` set to `value`, intermediate mappings created as needed."""
    head, _, rest = dotted.partition(".")
    out = dict(data)
    if rest:
        inner = out.get(head, {})
        if not isinstance(inner, dict):
            raise KitError(Option("set", dotted), f": {head} is not a mapping")
        out[head] = with_key(inner, rest, value)
    else:
        out[head] = value
    return out


# (Overrides field, the option that gives it, the field it sets)
_FLAGS = (
    ("nodes", "nodes", "nodes"),
    ("gpus", "gpus", "gpus_per_node"),
    ("procs_per_node", "procs_per_node", "procs_per_node"),
    ("strategy", "strategy", "strategy"),
    ("mixed_precision", "mixed_precision", "mixed_precision"),
    ("master_port", "port", "cluster.master_port"),
)


def override_pairs(ov: Overrides) -> list[tuple[str, Any, Option]]:
    """(dotted key, value, how the user wrote it) for every flag given and every --set."""
    flags = [
        (key, getattr(ov, attr), Option(option, getattr(ov, attr)))
        for attr, option, key in _FLAGS
        if getattr(ov, attr) is not None
    ]
    return flags + [(*parse_set(s), Option("set", s)) for s in ov.sets]


def _overlap(a: str, b: str) -> bool:
    a, b = a.rstrip("+"), b.rstrip("+")
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def check_conflicts(pairs: list[tuple[str, Any, Option]]) -> None:
    """Two overrides of one field (or of a field and its section) must agree; the last must not silently win.
    Appends (`args+=`) compose, in the order given, also after a replacement of their field (`args=...` then
    `args+=...`: replaced, then appended to); a replacement after an append would drop it: a conflict."""
    for i, (key, value, said) in enumerate(pairs):
        for other_key, other_value, other_said in pairs[:i]:
            if key.endswith("+") and (other_key.endswith("+") or other_key == key[:-1]):
                continue
            if _overlap(key, other_key) and (key != other_key or value != other_value):
                raise KitError(f"{key}: ", other_said, " conflicts with ", said, "; give one value")


def apply_overrides(job: JobSpec, cluster: ClusterSpec, ov: Overrides) -> tuple[JobSpec, ClusterSpec]:
    """New specs with every override applied and re-validated; the inputs are left untouched."""
    pairs = override_pairs(ov)
    if not pairs and not ov.extra_args:
        return job, cluster
    check_conflicts(pairs)
    job_data = job.model_dump(exclude_unset=True)
    cluster_data = cluster.model_dump(exclude_unset=True)
    for key, value, said in pairs:
        if key.startswith("cluster."):
            cluster_data = with_key(cluster_data, key.removeprefix("cluster."), value)
        elif key.endswith("+"):  # append to a list field
            current = _key_value(job_data, key[:-1]) or []
            if not isinstance(value, list) or not isinstance(current, list):
                raise KitError(
                    said,
                    ": += appends a list to a list field, e.g. ",
                    Option("set", 'args+=["--epochs", "1"]', quoted=True),
                )
            job_data = with_key(job_data, key[:-1], [*current, *value])
        else:
            job_data = with_key(job_data, key, value)
    if ov.extra_args:
        job_data["args"] = [*job_data.get("args", []), *ov.extra_args]
    words = {key: said for key, _, said in pairs}
    return (
        validate(JobSpec, job_data, "job (after overrides)", words),
        validate(
            ClusterSpec,
            cluster_data,
            "cluster (after overrides)",
            {k.removeprefix("cluster."): w for k, w in words.items() if k.startswith("cluster.")},
        ),
    )


def set_item(key: str, value) -> str:
    """`--set` text for a value given as data (the Python API's set={...}): read back by parse_set as exactly this
    value (a string "no" stays a string, a list stays a list)."""
    if key.split(".")[-2:-1] == ["env"]:
        return f"{key}={value}"
    text = yaml.safe_dump(value, default_flow_style=True, width=float("inf")).strip()
    return f"{key}={text.removesuffix(chr(10) + '...').strip()}"

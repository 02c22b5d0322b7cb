"""Command-line overrides (`--nodes`, `--set key=value`) applied to validated specs, purely."""

from dataclasses import dataclass
from typing import Any, Optional

import yaml

from launcher.errors import KitError
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


def parse_set(item: str) -> tuple[str, Any]:
    key, sep, raw = item.partition("=")
    if not sep or not key or any(not part for part in key.split(".")):
        raise KitError(f"--set {item!r}: expected key=value, e.g. --set deepspeed.zero_stage=3")
    path = key.split(".")
    if len(path) >= 2 and path[-2] == "env":
        # Environment values are text: `--set env.OMP_NUM_THREADS=4` means the string "4".
        return key, raw
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def _with(data: dict, dotted: str, value) -> dict:
    """A copy of `data` with `dotted` set to `value`, intermediate mappings created as needed."""
    head, _, rest = dotted.partition(".")
    out = dict(data)
    if rest:
        inner = out.get(head, {})
        if not isinstance(inner, dict):
            raise KitError(f"--set {dotted}: {head} is not a mapping")
        out[head] = _with(inner, rest, value)
    else:
        out[head] = value
    return out


def _flag_sets(ov: Overrides) -> list[tuple[str, Any]]:
    flags = [
        ("nodes", ov.nodes), ("gpus_per_node", ov.gpus), ("procs_per_node", ov.procs_per_node),
        ("strategy", ov.strategy), ("mixed_precision", ov.mixed_precision),
        ("cluster.master_port", ov.master_port),
    ]
    return [(k, v) for k, v in flags if v is not None]


def apply_overrides(job: JobSpec, cluster: ClusterSpec, ov: Overrides) -> tuple[JobSpec, ClusterSpec]:
    """New specs with every override applied and re-validated; the inputs are left untouched."""
    pairs = _flag_sets(ov) + [parse_set(s) for s in ov.sets]
    if not pairs:
        return job, cluster
    job_data = job.model_dump(exclude_unset=True)
    cluster_data = cluster.model_dump(exclude_unset=True)
    for key, value in pairs:
        if key.startswith("cluster."):
            cluster_data = _with(cluster_data, key.removeprefix("cluster."), value)
        else:
            job_data = _with(job_data, key, value)
    return (validate(JobSpec, job_data, "job (after overrides)"),
            validate(ClusterSpec, cluster_data, "cluster (after overrides)"))

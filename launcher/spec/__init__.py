"""Job and cluster specs: strict schemas at the edge, loaded from YAML."""

import os
from typing import Optional

from launcher.backends import registry
from launcher.errors import KitError, Option
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.load import load_json, parse_yaml, read_text, validate
from launcher.spec.overrides import Overrides, apply_overrides
from launcher.spec.sweep import SweepSpec


def default_cluster() -> ClusterSpec:
    """The cluster kit uses without --cluster, before this machine's facts are filled in (load_cluster). Built on
    use: validating it asks the backend's placement, which imports the planner, which imports these schemas."""
    return ClusterSpec(name=registry.DEFAULT, backend=registry.DEFAULT, cpu_threads_per_process="auto")


def __getattr__(name):
    if name == "DEFAULT_CLUSTER":
        return default_cluster()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# A key each kind of file must have, that the other kind never has: a file given in the other's place is told so.
_OWN_KEY = {"job": "entrypoint", "cluster": "backend"}


def _read_spec(model, path: str, what: str):
    """Load and validate the job or cluster file `path` (`what`); one that is the other kind is told as a swap."""
    data = parse_yaml(read_text(path, what), path)
    other = "cluster" if what == "job" else "job"
    if _OWN_KEY[other] in data and _OWN_KEY[what] not in data:
        raise KitError(
            f"{path} looks like a {other} file (it has {_OWN_KEY[other]}:); did you swap JOB and ",
            Option("cluster"),
            "? (kit submit JOB.yaml ",
            Option("cluster", "CLUSTER.yaml"),
            ")",
        )
    return validate(model, data, path)


def load_job(path: str) -> JobSpec:
    """The job file; a relative `deepspeed.config_file` is taken from the job file's own directory."""
    spec = _read_spec(JobSpec, path, "job")
    ds_file = spec.deepspeed.config_file
    if ds_file is None or os.path.isabs(ds_file):
        return spec
    rebased = os.path.join(os.path.dirname(os.path.abspath(path)), ds_file)
    deepspeed = spec.deepspeed.model_copy(update={"config_file": os.path.normpath(rebased)})
    return spec.model_copy(update={"deepspeed": deepspeed})


def load_cluster(path) -> ClusterSpec:
    """The cluster file, or the embedded default: this machine, with the GPUs and cores it has. Facts about this
    machine that a cluster needs (a local cluster's cores and visible GPUs) are read here, at the edge, by its
    backend's placement, never in the plan."""
    if path is None:
        default = default_cluster()
        return registry.placement(default.backend).at_edge(default, embedded=True).cluster
    spec = _read_spec(ClusterSpec, path, "cluster")
    return registry.placement(spec.backend).at_edge(spec).cluster


def load_sweep_file(path: str) -> SweepSpec:
    """A sweep file holds the spec at its top level (or under one `sweep:` key, like a job file's section)."""
    data = parse_yaml(read_text(path, "sweep file"), path)
    if set(data) == {"sweep"} and isinstance(data["sweep"], dict):
        data = data["sweep"]
    return validate(SweepSpec, data, f"{path}: sweep")


def sweep_of(job: JobSpec, job_path: str, sweep_path: Optional[str]) -> Optional[SweepSpec]:
    """The sweep a submission runs: the job's `sweep:` section, or the file given with `--sweep`; None for one run."""
    if sweep_path is None:
        return job.sweep
    if job.sweep is not None:
        raise KitError(
            Option("sweep", sweep_path),
            f": job {job_path} has a sweep section already; drop ",
            Option("sweep"),
            " or the job's sweep section",
        )
    return load_sweep_file(sweep_path)


def load_user_deepspeed(resolved_job: JobSpec):
    """The user's own DeepSpeed JSON, if the job names one: read here, at the edge, never in the plan.
    A path from `--set` is relative to the current directory; errors show the absolute path tried."""
    path = resolved_job.deepspeed.config_file
    return None if path is None else load_json(os.path.abspath(path), "deepspeed.config_file")


__all__ = [
    "ClusterSpec",
    "JobSpec",
    "Overrides",
    "apply_overrides",
    "load_job",
    "load_cluster",
    "load_sweep_file",
    "load_user_deepspeed",
    "sweep_of",
    "DEFAULT_CLUSTER",
]

"""Job and cluster specs: strict schemas at the edge, loaded from YAML."""

from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.load import load_json, load_model
from launcher.spec.overrides import Overrides, apply_overrides

DEFAULT_CLUSTER = ClusterSpec(name="local", backend="local")


def load_job(path: str) -> JobSpec:
    return load_model(JobSpec, path, "job")


def load_cluster(path) -> ClusterSpec:
    """The cluster file, or the embedded default: this machine, with the GPUs it has."""
    if path is not None:
        return load_model(ClusterSpec, path, "cluster")
    from launcher.hostinfo import local_gpu_count
    return DEFAULT_CLUSTER.model_copy(update={"gpus_per_node": local_gpu_count()})


def load_user_deepspeed(resolved_job: JobSpec):
    """The user's own DeepSpeed JSON, if the job names one: read here, at the edge, never in the plan."""
    path = resolved_job.deepspeed.config_file
    return None if path is None else load_json(path, "deepspeed.config_file")


__all__ = ["ClusterSpec", "JobSpec", "Overrides", "apply_overrides", "load_job", "load_cluster",
           "load_user_deepspeed", "DEFAULT_CLUSTER"]

"""Job and cluster specs: strict schemas at the edge, loaded from YAML."""

import os

from launcher.errors import KitError
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.load import load_json, load_model
from launcher.spec.overrides import Overrides, apply_overrides

DEFAULT_CLUSTER = ClusterSpec(name="local", backend="local", cpu_threads_per_process="auto")


def load_job(path: str) -> JobSpec:
    """The job file; a relative `deepspeed.config_file` is taken from the job file's own directory."""
    spec = load_model(JobSpec, path, "job")
    ds_file = spec.deepspeed.config_file
    if ds_file is None or os.path.isabs(ds_file):
        return spec
    rebased = os.path.join(os.path.dirname(os.path.abspath(path)), ds_file)
    deepspeed = spec.deepspeed.model_copy(update={"config_file": os.path.normpath(rebased)})
    return spec.model_copy(update={"deepspeed": deepspeed})


def load_cluster(path) -> ClusterSpec:
    """The cluster file, or the embedded default: this machine, with the GPUs and cores it has."""
    from launcher.hostinfo import local_cpu_count, local_gpu_count, visible_gpu_ids
    # GPUs this process may use: CUDA_VISIBLE_DEVICES (user or scheduler) narrows the driver's list.
    visible = list(visible_gpu_ids(os.environ, local_gpu_count()))
    restricted = {"gpu_ids": visible} if "CUDA_VISIBLE_DEVICES" in os.environ else {}
    if path is None:
        return DEFAULT_CLUSTER.model_copy(update={"gpus_per_node": len(visible), "cpus": local_cpu_count(),
                                                  **restricted})
    spec = load_model(ClusterSpec, path, "cluster")
    if spec.backend == "local" and spec.gpu_ids is None:
        spec = spec.model_copy(update=restricted)
    if spec.backend == "local" and spec.cpus is None:
        # A local cluster is this machine: its cores are read here, at the edge, never in the plan.
        return spec.model_copy(update={"cpus": local_cpu_count()})
    return spec


# The files a cluster's `ssh:` section names on this machine, and what to do when one is not there. OpenSSH
# ignores a missing IdentityFile of its config; one named in the cluster file is a mistake to say at once.
SSH_FILES = {"identity_file": "give the private key's path, or leave it out to use your ssh-agent and ~/.ssh/config",
             "config_file": "give an OpenSSH client config's path, or leave it out to read ~/.ssh/config"}


def check_ssh_files(resolved_cluster: ClusterSpec) -> None:
    """Raise (one line naming the field) if a file the cluster's `ssh:` section names is not there, when kit is
    about to log in with it (not for a dry-run: the plan needs no key). A relative path is taken from the current
    directory, as ssh takes it; errors show the path tried."""
    slurm = resolved_cluster.slurm
    if resolved_cluster.backend != "ssh" and (slurm is None or slurm.login_host is None):
        return   # the section is not used
    for field, fix in SSH_FILES.items():
        path = getattr(resolved_cluster.ssh, field) if resolved_cluster.ssh is not None else None
        tried = None if path is None else os.path.abspath(os.path.expanduser(path))
        if tried is not None and not os.path.isfile(tried):
            raise KitError(f"ssh.{field} {tried}: no such file; {fix}")


def load_user_deepspeed(resolved_job: JobSpec):
    """The user's own DeepSpeed JSON, if the job names one: read here, at the edge, never in the plan.
    A path from `--set` is relative to the current directory; errors show the absolute path tried."""
    path = resolved_job.deepspeed.config_file
    return None if path is None else load_json(os.path.abspath(path), "deepspeed.config_file")


__all__ = ["ClusterSpec", "JobSpec", "Overrides", "apply_overrides", "check_ssh_files", "load_job",
           "load_cluster", "load_user_deepspeed", "DEFAULT_CLUSTER"]

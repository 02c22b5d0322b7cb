"""Where a sweep's trials run at once (pure). Trial i runs in lane i % lanes; a lane runs its trials one after
another, so what each trial gets (GPUs, hosts, port) is fixed at plan time and the dry-run shows it.

* local, GPU trials: G visible GPUs and trials needing n each give at most G // n lanes, each with its own
  slice of `gpu_ids`: never two trials on one GPU.
* local, CPU trials: `parallel` lanes; each lane gets its share of the cores for `cpu_threads_per_process: auto`.
* ssh: with H hosts and trials of m nodes, H // m disjoint host sets; lane k runs on set k % sets. CPU trials
  beyond that share hosts; GPU trials never do (lanes are capped at the number of sets).
* slurm: the job array's `%parallel` does it; every lane keeps the cluster as it is.
Trials of different lanes may run at once on one host, so each lane gets its own master port: a fixed port
becomes port + lane; a `{base, span}` policy gives lane k base + (crc32(sweep id) + k) % span, so two trials of
the sweep never draw the same port (per-run-id ports would clash once in `span` pairs)."""

import zlib
from dataclasses import dataclass

from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec


@dataclass(frozen=True)
class Lanes:
    clusters: tuple[ClusterSpec, ...]   # lane k's cluster
    placement: tuple[str, ...]          # lane k's GPUs or hosts, for the dry-run ("" when all share)

    @property
    def count(self) -> int:
        return len(self.clusters)


def _gpus(job: JobSpec, cluster: ClusterSpec) -> int:
    return job.gpus_per_node if job.gpus_per_node is not None else cluster.gpus_per_node


def _with_port(cluster: ClusterSpec, lane: int, count: int, sweep_id: str) -> ClusterSpec:
    policy = cluster.master_port
    if count == 1 or cluster.backend == "slurm":
        return cluster
    if isinstance(policy, int):
        return cluster.model_copy(update={"master_port": policy + lane})
    if policy.span < count:
        return cluster
    port = policy.base + (zlib.crc32(sweep_id.encode()) + lane) % policy.span
    return cluster.model_copy(update={"master_port": port})


def _local(cluster: ClusterSpec, jobs: list[JobSpec], parallel: int) -> Lanes:
    need = max(job.nodes * _gpus(job, cluster) for job in jobs)
    if need == 0:
        count = min(parallel, len(jobs))
        share = {} if cluster.cpus is None else {"cpus": max(1, cluster.cpus // count)}
        return Lanes(tuple(cluster.model_copy(update=share) for _ in range(count)), ("",) * count)
    ids = cluster.gpu_ids if cluster.gpu_ids is not None else [str(i) for i in range(cluster.gpus_per_node)]
    count = max(1, min(parallel, len(ids) // need, len(jobs)))
    if count == 1:
        return Lanes((cluster,), ("",))
    slices = [ids[k * need:(k + 1) * need] for k in range(count)]
    return Lanes(tuple(cluster.model_copy(update={"gpu_ids": s}) for s in slices),
                 tuple("gpus " + ",".join(s) for s in slices))


def _ssh(cluster: ClusterSpec, jobs: list[JobSpec], parallel: int) -> Lanes:
    m = max(job.nodes for job in jobs)
    sets = len(cluster.hosts) // m
    gpu = any(_gpus(job, cluster) for job in jobs)
    count = min(parallel, len(jobs), sets if gpu else parallel)
    if sets <= 1 or count <= 1:
        return Lanes((cluster,) * max(1, count), ("",) * max(1, count))
    clusters, placement = [], []
    for k in range(count):
        start = (k % sets) * m
        hosts = cluster.hosts[start:] + cluster.hosts[:start]
        clusters.append(cluster.model_copy(update={"hosts": hosts}))
        placement.append("hosts " + ",".join(h.name for h in hosts[:m]))
    return Lanes(tuple(clusters), tuple(placement))


def plan_lanes(cluster: ClusterSpec, jobs: list[JobSpec], parallel: int, sweep_id: str) -> Lanes:
    """`cluster` and `jobs` (one per trial) with the command line's overrides already applied."""
    if cluster.backend == "local":
        lanes = _local(cluster, jobs, parallel)
    elif cluster.backend == "ssh":
        lanes = _ssh(cluster, jobs, parallel)
    else:
        count = min(parallel, len(jobs))
        lanes = Lanes((cluster,) * count, ("",) * count)
    return Lanes(tuple(_with_port(c, k, lanes.count, sweep_id) for k, c in enumerate(lanes.clusters)),
                 lanes.placement)

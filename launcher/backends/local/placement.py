"""How the planner places a local run: every node is this machine, the nodes share its cores and GPUs, which it
reads at submission (at_edge: the facts about this machine that kit feeds into the plan as inputs; the plan
itself reads nothing)."""

import dataclasses
import os
from typing import Optional

from launcher.errors import KitError, Option
from launcher.planning.placement import CONFIG, DRY, Edge, Lanes, Layout, Placed, Placement, gpus_of
from launcher.spec.cluster import ClusterSpec, Host
from launcher.spec.job import JobSpec

# Facts about this machine that the CLI feeds into the plan as inputs (the plan itself reads nothing).
NVIDIA_GPUS = "/proc/driver/nvidia/gpus"


def local_gpu_count() -> int:
    """GPUs the NVIDIA driver exposes, without importing torch (the CLI stays fast)."""
    try:
        return len(os.listdir(NVIDIA_GPUS))
    except OSError:
        return 0


def local_cpu_count() -> int:
    """Cores this process may run on (its affinity: taskset, cgroup cpusets), not every core of the machine."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def visible_gpu_ids(environ, driver_count: int) -> tuple[str, ...]:
    """The GPU ids this process may use: CUDA_VISIBLE_DEVICES if set (by the user or a scheduler), else every GPU
    of the driver. Like CUDA, an index outside the driver's range ends the list; with no driver there are none."""
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if driver_count == 0:
        return ()
    if raw is None:
        return tuple(str(i) for i in range(driver_count))
    ids = []
    for word in (w.strip() for w in raw.split(",")):
        if not word or (word.lstrip("-").isdigit() and not 0 <= int(word) < driver_count):
            break
        ids.append(word)
    return tuple(ids)


LOCALHOST = Host(name="localhost", address="127.0.0.1")


def _code_dir(cluster: ClusterSpec, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, cluster.workdir))  # the nodes run here


class LocalPlacement(Placement):
    name = "local"
    inherits_submit_env = True
    nodes_run_kits_python = True  # kit's own interpreter: the venv kit lives in is the nodes' too
    nodes_share_cores = True  # the simulated nodes of a local cluster all share this one machine's cores

    def validate(self, cluster: ClusterSpec, stage: str = CONFIG, *, plan=None, entrypoint=None, base_dir=".") -> None:
        if stage == CONFIG:
            if cluster.hosts:
                raise ValueError("a local cluster runs every node on this machine: remove hosts")
            if cluster.gpu_ids is not None and len(set(cluster.gpu_ids)) != len(cluster.gpu_ids):
                raise ValueError("gpu_ids: each GPU id may appear only once")
        elif stage == DRY:
            self._dry_checks(plan, cluster, entrypoint, base_dir)

    def _dry_checks(self, plan, cluster: ClusterSpec, entrypoint, base_dir: str) -> None:
        """A module that is no file of the workdir, looked for by the node's own interpreter after its setup lines, as
        the run checks it (it may be installed there); the master port is the run's own, not checked."""
        from launcher.preflight.source import module_file

        code_dir = _code_dir(cluster, base_dir)
        if entrypoint.module is None or module_file(code_dir, [code_dir], entrypoint.module, run=True):
            return  # a script, or a module file of the workdir: preflight/here.py looked at it already
        from launcher.backends.local.preflight import check_entrypoint

        check_entrypoint(plan, entrypoint, cluster.workdir, base_dir)

    def at_edge(
        self, cluster: ClusterSpec, plan=None, job: Optional[JobSpec] = None, *, cwd: str = ".", embedded: bool = False
    ) -> Edge:
        """The cluster: this machine's cores (its CPU affinity) and the GPUs CUDA_VISIBLE_DEVICES leaves visible. A
        plan: as it is; the nodes run here, in the workdir."""
        if plan is not None:
            return Edge(cluster, plan, _code_dir(cluster, cwd))
        visible = list(visible_gpu_ids(os.environ, local_gpu_count()))
        restricted = {"gpu_ids": visible} if "CUDA_VISIBLE_DEVICES" in os.environ else {}
        if embedded:
            return Edge(
                cluster.model_copy(update={"gpus_per_node": len(visible), "cpus": local_cpu_count(), **restricted})
            )
        if cluster.gpu_ids is None:
            cluster = cluster.model_copy(update=restricted)
        if cluster.cpus is None:
            cluster = cluster.model_copy(update={"cpus": local_cpu_count()})
        return Edge(cluster)

    def place(self, job: JobSpec, cluster: ClusterSpec, failed: dict) -> Placed:
        """Every node on this machine; the simulated nodes share its GPUs, each taking its own slice. (It lists no
        hosts: none to place away from.)"""
        hosts = (LOCALHOST,) * job.nodes
        gpus = gpus_of(job, cluster)
        need = gpus * len(hosts)
        if gpus and need > cluster.gpus_per_node:
            raise KitError(
                f"gpus_per_node: {len(hosts)} local node(s) x {gpus} GPUs need {need} GPUs but this machine "
                f"has {cluster.gpus_per_node}; lower ",
                Option("gpus"),
                " or ",
                Option("nodes"),
            )
        return Placed(cluster, hosts)

    def layout(self, cluster: ClusterSpec, hosts: tuple[Host, ...], run_dir: str, gpus_per_node: int) -> Layout:
        """Each node's `--gpu_ids`: its slice of the ids kit may use (cluster data, from CUDA_VISIBLE_DEVICES at
        submit time), else of 0..N-1."""
        words = super().layout(cluster, hosts, run_dir, gpus_per_node)
        if not gpus_per_node:
            return words
        nodes = len(hosts)
        ids = cluster.gpu_ids if cluster.gpu_ids is not None else [str(i) for i in range(cluster.gpus_per_node)]
        need = nodes * gpus_per_node
        if need > len(ids):
            raise KitError(
                f"gpu_ids: {nodes} local node(s) x {gpus_per_node} GPUs need {need} GPUs but "
                f"only {len(ids)} are visible ({','.join(ids) or 'none'}); lower ",
                Option("gpus"),
                " or ",
                Option("nodes"),
            )
        slices = tuple(",".join(ids[r * gpus_per_node : (r + 1) * gpus_per_node]) for r in range(nodes))
        return dataclasses.replace(words, gpu_ids=slices)

    def binding(self, cluster: ClusterSpec, job: JobSpec) -> dict:
        from launcher.preflight.entrypoint import EntrypointRef

        return {"entrypoint": EntrypointRef(job.entrypoint.module, job.entrypoint.script), "workdir": cluster.workdir}

    def lanes(self, cluster: ClusterSpec, jobs: list[JobSpec], parallel: int) -> Lanes:
        """CPU trials: `parallel` lanes, each with its share of the cores; GPU trials: as many lanes as disjoint
        slices of the visible GPUs allow (never two trials on one GPU)."""
        need = max(job.nodes * gpus_of(job, cluster) for job in jobs)
        if need == 0:
            count = min(parallel, len(jobs))
            share = {} if cluster.cpus is None else {"cpus": max(1, cluster.cpus // count)}
            return Lanes(tuple(cluster.model_copy(update=share) for _ in range(count)), ("",) * count)
        ids = cluster.gpu_ids if cluster.gpu_ids is not None else [str(i) for i in range(cluster.gpus_per_node)]
        count = max(1, min(parallel, len(ids) // need, len(jobs)))
        if count == 1:
            return Lanes((cluster,), ("",))
        slices = [ids[k * need : (k + 1) * need] for k in range(count)]
        return Lanes(
            tuple(cluster.model_copy(update={"gpu_ids": s}) for s in slices),
            tuple("gpus " + ",".join(s) for s in slices),
        )


PLACEMENT = LocalPlacement()

"""Resolve and check the shape of a run: nodes, processes, device, hosts, batch arithmetic."""

from dataclasses import dataclass
from typing import Optional

from launcher.backends import registry
from launcher.errors import KitError, Option
from launcher.spec.cluster import ClusterSpec, Host
from launcher.spec.job import JobSpec


@dataclass(frozen=True)
class Shape:
    nodes: int
    procs_per_node: int
    gpus_per_node: int
    device: str  # cuda | cpu
    hosts: tuple[Host, ...]  # one per node; SLURM hosts are placeholders filled by the allocation
    gradient_accumulation_steps: int
    # --num_cpu_threads_per_process on CPU nodes; None on a CPU node: sized on the node at its start from its own
    # cores (render/shell.threads_lines), as no core count is known here.
    cpu_threads: Optional[int] = None
    pipeline_microbatches: int = 0  # 0: not pipelined

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node


def _procs(job: JobSpec, cluster: ClusterSpec, gpus: int) -> int:
    # On GPU nodes it is one process per GPU; procs_per_node sizes CPU nodes only.
    if gpus:
        return gpus
    return job.procs_per_node if job.procs_per_node is not None else cluster.procs_per_node


def _check_cpu(job: JobSpec) -> None:
    if job.strategy == "fsdp":
        raise KitError(
            "strategy: fsdp needs GPUs (accelerate's FSDP does not engage on CPU); "
            "use ddp or deepspeed on a CPU cluster, or set ",
            Option("gpus"),
        )
    if job.mixed_precision == "fp16":
        raise KitError("mixed_precision: fp16 needs GPUs; use bf16 or no on a CPU cluster, or set ", Option("gpus"))


def _accumulation(job: JobSpec, world: int) -> int:
    if job.global_batch_size is None:
        return job.gradient_accumulation_steps
    assert job.batch_size_per_device is not None  # JobSpec: global_batch_size needs batch_size_per_device
    per_step = job.batch_size_per_device * world
    steps, rest = divmod(job.global_batch_size, per_step)
    if rest or steps == 0:
        raise KitError(
            f"global_batch_size: {job.global_batch_size} is not a multiple of batch_size_per_device "
            f"{job.batch_size_per_device} x world size {world} = {per_step}; pick a multiple of {per_step}"
        )
    if "gradient_accumulation_steps" in job.model_fields_set and steps != job.gradient_accumulation_steps:
        raise KitError(
            f"gradient_accumulation_steps: {job.gradient_accumulation_steps} but global_batch_size "
            f"{job.global_batch_size} / ({job.batch_size_per_device} x {world}) = {steps}; set one of them"
        )
    return steps


def _cpu_threads(cluster: ClusterSpec, nodes: int, procs: int) -> Optional[int]:
    """Threads per process on CPU nodes: a number given, or (`auto`, the default) the node's cores split among
    the processes that share them; None when the cores are not known here (each node counts its own at start)."""
    wanted = cluster.cpu_threads_per_process
    if isinstance(wanted, int):
        return wanted
    if cluster.cpus is None:
        return None
    shared_by = nodes * procs if registry.placement(cluster.backend).nodes_share_cores else procs
    return max(1, cluster.cpus // shared_by)


def check_pipeline(job: JobSpec, world_size: int) -> int:
    """Micro-batches per step of a pipelined job (0 when not pipelined); one line for an impossible layout."""
    stages = job.pipeline_stages
    if stages == 1:
        if job.pipeline_microbatches is not None:
            raise KitError("pipeline_microbatches: needs pipeline_stages of 2 or more")
        return 0
    if world_size % stages:
        raise KitError(
            f"pipeline_stages: {stages} stages do not divide the world of {world_size} processes; "
            f"use a divisor of {world_size}, or change ",
            Option("nodes"),
            " / ",
            Option("procs_per_node"),
            " / ",
            Option("gpus"),
        )
    if job.strategy != "ddp":
        raise KitError(
            f"pipeline_stages: runs with strategy ddp (the replicas of a stage average gradients), not {job.strategy}"
        )
    if job.mixed_precision != "no":
        raise KitError("pipeline_stages: the pipelined training runs in fp32; set mixed_precision: no")
    return job.pipeline_microbatches or max(stages, job.gradient_accumulation_steps)


MAX_NODES, MAX_PROCS_PER_NODE = 10000, 1024  # beyond any cluster; a plan of 10^8 nodes would exhaust memory


def check_limits(job: JobSpec) -> None:
    """Node and process counts within what kit plans for, checked before anything is sized by them."""
    if job.nodes > MAX_NODES:
        raise KitError(f"nodes: {job.nodes} is more than kit plans for (at most {MAX_NODES}); check ", Option("nodes"))
    if (job.procs_per_node or 0) > MAX_PROCS_PER_NODE or (job.gpus_per_node or 0) > MAX_PROCS_PER_NODE:
        raise KitError(
            f"procs_per_node/gpus_per_node: more than {MAX_PROCS_PER_NODE} processes per node; check ",
            Option("procs_per_node"),
            "/",
            Option("gpus"),
        )


def resolve_shape(job: JobSpec, cluster: ClusterSpec, hosts: tuple[Host, ...]) -> Shape:
    """The run's shape on `hosts` (one per node, placed by the backend's Placement.place after check_limits)."""
    gpus = job.gpus_per_node if job.gpus_per_node is not None else cluster.gpus_per_node
    if gpus == 0:
        _check_cpu(job)
    procs = _procs(job, cluster, gpus)
    return Shape(
        nodes=job.nodes,
        procs_per_node=procs,
        gpus_per_node=gpus,
        device="cuda" if gpus else "cpu",
        hosts=hosts,
        gradient_accumulation_steps=_accumulation(job, job.nodes * procs),
        cpu_threads=None if gpus else _cpu_threads(cluster, job.nodes, procs),
        pipeline_microbatches=check_pipeline(job, job.nodes * procs),
    )

"""The environment kit adds on each node: user env, the world the job must check, device switches."""

from launcher.planning.model import InheritPolicy
from launcher.planning.shape import Shape
from launcher.secrets import is_secret_name
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec

# Variables that accelerate, torchrun, DeepSpeed or an MPI launcher read to decide the world or the strategy.
# A stray one in the submitter's shell (left over from another launch) would change the run without appearing
# in the plan, so nodes never inherit them; a job that needs one sets it in its `env`, where the plan shows it.
INHERIT = InheritPolicy(
    drop_prefixes=(
        "ACCELERATE_",
        "DEEPSPEED_",
        "DS_",
        "FSDP_",
        "KIT_EXPECTED_",
        "MEGATRON_LM_",
        "MV2_COMM_WORLD_",
        "OMPI_COMM_WORLD_",
        "PARALLELISM_CONFIG_",
        "PET_",
        "TORCHELASTIC_",
    ),
    drop_names=(
        "CROSS_RANK",
        "CROSS_SIZE",
        "FORK_LAUNCHED",
        "GROUP_RANK",
        "GROUP_WORLD_SIZE",
        "KIT_MASTER_ADDR",
        "KIT_PROGRESS",
        "KIT_RUN_ID",
        "LOCAL_RANK",
        "LOCAL_SIZE",
        "LOCAL_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "MPI_LOCALNRANKS",
        "MPI_LOCALRANKID",
        "NODE_RANK",
        "PMI_RANK",
        "PMI_SIZE",
        "RANK",
        "ROLE_NAME",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "WORLD_SIZE",
    ),
)


def node_env(job: JobSpec, cluster: ClusterSpec, shape: Shape, run_id: str) -> dict[str, str]:
    # The job's env wins over the cluster's; the names kit reserves (base.RESERVED_ENV) are refused by the schemas.
    env = {**cluster.env, **job.env}
    env.update(
        {
            "KIT_RUN_ID": run_id,
            "KIT_EXPECTED_WORLD_SIZE": str(shape.world_size),
            "KIT_EXPECTED_NUM_MACHINES": str(shape.nodes),
            "KIT_EXPECTED_STRATEGY": job.strategy,
            "KIT_EXPECTED_MIXED_PRECISION": job.mixed_precision,
            "KIT_EXPECTED_DEVICE": shape.device,
            # Progress bars redraw as whole lines that start with a mark (tags.PROGRESS_MARK): kit draws them in
            # place on a terminal and thins them to one per 30 s in logs and pipes (torchrun tees worker output: no
            # rank sees a tty).
            "KIT_PROGRESS": "redraw",
        }
    )
    if job.pipeline_stages > 1:  # the training module cuts its model into stages (train/pipeline_run.py)
        env["KIT_EXPECTED_PIPELINE_STAGES"] = str(job.pipeline_stages)
        env["KIT_EXPECTED_PIPELINE_MICROBATCHES"] = str(shape.pipeline_microbatches)
    # torchrun tees every rank's output into files, and Python block-buffers stdout to a file: a script that
    # prints without flushing would reach the console and `kit logs --follow` in 8 KiB lumps or at its exit.
    env.setdefault("PYTHONUNBUFFERED", "1")
    # accelerate's own channel for accumulation, under every strategy: the DeepSpeed JSON carries the same number
    # (or "auto", which accelerate fills from this), so the training loop never counts with another one.
    env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = str(shape.gradient_accumulation_steps)
    if shape.device == "cpu" and job.strategy == "ddp":
        # With MULTI_GPU this forms a real gloo world; `--cpu`/MULTI_CPU would train each process alone.
        env["ACCELERATE_USE_CPU"] = "1"
    if shape.device == "cpu" and job.strategy == "deepspeed":
        # ACCELERATE_USE_CPU would silently drop DeepSpeed; pin DeepSpeed's accelerator instead.
        env["DS_ACCELERATOR"] = "cpu"
    return env


def secret_names(job: JobSpec, env: dict[str, str]) -> tuple[str, ...]:
    """Names delivered out of band: declared pass-throughs and literal values with secret-looking names."""
    return tuple(sorted(set(job.secret_env) | {k for k in env if is_secret_name(k)}))

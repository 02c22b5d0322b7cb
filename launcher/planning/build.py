"""The one pure function: (job, cluster, overrides, run id) -> LaunchPlan. No I/O, no environment reads."""

import posixpath
import re
from typing import Optional

from launcher.backends import registry
from launcher.errors import KitError
from launcher.planning.attempt import Attempt, attempt_port, rdzv_env, replace_lost
from launcher.planning.env import INHERIT, node_env, secret_names
from launcher.planning.model import LaunchPlan, Limits, NodePlan, World
from launcher.planning.placement import Placement, master_port
from launcher.planning.placement import spares as spare_hosts
from launcher.planning.shape import Shape, check_limits, resolve_shape
from launcher.planning.tags import WORKER_TAG_ENV, worker_tag_template
from launcher.render import modules as module_check
from launcher.render.accelerate import LaunchSettings, accelerate_config, distributed_type, fsdp_config, launch_argv
from launcher.render.deepspeed import deepspeed_config
from launcher.render.direct import direct_argv, direct_env, is_direct
from launcher.render.envcheck import file_name as env_check_file
from launcher.render.envcheck import program as env_check_program
from launcher.render.envcheck import task_line
from launcher.render.shell import interface_lines, node_command, threads_lines
from launcher.render.text import to_json, to_yaml
from launcher.render.torchrun import torchrun_argv, torchrun_env
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.overrides import Overrides, apply_overrides

FIRST = Attempt()  # a run's first attempt: the plan as submitted
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _strategy_section(job: JobSpec, shape: Shape, run_dir: str, user_ds: Optional[dict]):
    """The accelerate config section and any extra file (the DeepSpeed JSON) for the job's strategy."""
    if job.strategy == "fsdp":
        return ("fsdp_config", fsdp_config(job.fsdp)), {}
    if job.strategy != "deepspeed":
        return None, {}
    if job.deepspeed.config_file is not None:
        from launcher.spec.deepspeed_json import check_user_deepspeed  # its schema: 6 ms to build, rarely needed

        ds = check_user_deepspeed(user_ds, job, shape.world_size)
    else:
        ds = deepspeed_config(job, shape.world_size, shape.gradient_accumulation_steps, shape.device == "cuda")
    path = f"{run_dir}/deepspeed.json"
    section = {
        "deepspeed_config_file": path,
        "deepspeed_multinode_launcher": "standard",
        "zero3_init_flag": job.deepspeed.zero3_init,
    }
    return ("deepspeed_config", section), {path: to_json(ds)}


def _settings(job, shape, python, config_file, rank, master, port, run_dir, gpu_ids) -> LaunchSettings:
    return LaunchSettings(
        python=python,
        config_file=config_file,
        distributed_type=distributed_type(job.strategy, shape.world_size),
        use_cpu=shape.device == "cpu",
        num_machines=shape.nodes,
        world_size=shape.world_size,
        machine_rank=rank,
        master_addr=master,
        master_port=port,
        mixed_precision=job.mixed_precision,
        cpu_threads_per_process=shape.cpu_threads,
        dynamo_backend=job.dynamo_backend,
        gpu_ids=gpu_ids,
        # On SLURM `rank` is ${SLURM_NODEID}: each task tees into its own node's directory.
        rank_log_dir=f"{run_dir}/node{rank}.ranks",
        module=job.entrypoint.module,
        script=job.entrypoint.script,
        args=tuple(job.args),
    )


def _node(job, cluster, shape, rank, host, env, secrets, files, ctx) -> NodePlan:
    """One node's plan; adds the node's accelerate YAML to `files`."""
    python, run_dir, layout, port, section, placement = ctx
    runtime_vars = placement.runtime_vars
    master, config_file, rank_word = layout.master, layout.config_files[rank], layout.ranks[rank]
    gpu_ids = layout.gpu_ids[rank]
    settings = _settings(job, shape, python, config_file, rank_word, master, port, run_dir, gpu_ids)
    threads_at_node = shape.device == "cpu" and shape.cpu_threads is None
    threads = threads_lines(shape.procs_per_node) if threads_at_node else ()
    if job.launcher == "torchrun":
        argv = torchrun_argv(settings, shape.procs_per_node)
        env = {**env, **torchrun_env(settings, section, threads_at_node)}
        config_file = None
    elif is_direct(settings.distributed_type, shape.world_size):
        argv = direct_argv(settings)
        env = {**env, **direct_env(settings, threads_at_node)}
        config_file = None
    else:
        files[config_file] = to_yaml(accelerate_config(settings, section))
        argv = launch_argv(settings)
    prelude = placement.prelude + threads + interface_lines(master, runtime_vars, cluster.interface)
    # kit's tag wins over a job's own template; on SLURM its node number is resolved inside each task.
    env = {**env, WORKER_TAG_ENV: worker_tag_template(rank_word)}
    command = node_command(
        cluster.workdir,
        tuple(cluster.setup),
        env,
        argv,
        runtime_vars,
        prelude,
        secrets,
        job_args=len(job.args),
        runtime_env=(WORKER_TAG_ENV,),
        before_exec=(
            _module_check_lines(job, argv, placement, python, run_dir, rank_word, files)
            + _env_check_lines(job, shape, placement, python, run_dir, rank_word, files)
        ),
    )
    shared = tuple(p for p in files if not p.startswith(f"{run_dir}/accelerate"))
    own = (config_file,) if config_file is not None else ()
    return NodePlan(
        machine_rank=rank,
        host=host.name,
        workdir=cluster.workdir,
        argv=argv,
        env=env,
        secret_env=secrets,
        setup=tuple(cluster.setup),
        files=tuple(sorted(shared + own)),
        command=command,
        log=f"{run_dir}/node{rank}.log",
    )


def _module_check_lines(job, argv, placement, python, run_dir, rank_word, files) -> tuple:
    """Where each task checks its own interpreter (SLURM), its line before the launcher and the program as a file
    of the plan: a missing accelerate (or torch) is one line at the task's start, not a traceback after it."""
    if not placement.task_checks:
        return ()
    files[module_check.file_name(run_dir)] = module_check.program()
    return (
        module_check.task_line(
            python, run_dir, rank_word, module_check.required(argv, job.strategy), placement.runtime_vars
        ),
    )


def _env_check_lines(job, shape, placement, python, run_dir, rank_word, files) -> tuple:
    """Where each task compares the nodes' environments itself (SLURM), its line before the launcher and the
    program as a file of the plan; elsewhere nothing (the backend's checks compare them, or one node has no peer)."""
    if placement.env_check_where != "task" or job.env_check == "off" or shape.nodes < 2:
        return ()
    files[env_check_file(run_dir)] = env_check_program()
    kind = "module" if job.entrypoint.module is not None else "script"
    return (
        task_line(
            python,
            run_dir,
            job.env_check,
            shape.nodes,
            rank_word,
            job.timeouts.rendezvous,
            kind,
            job.entrypoint.module or job.entrypoint.script,
            placement.runtime_vars,
        ),
    )


def build_plan(
    job: JobSpec,
    cluster: ClusterSpec,
    overrides: Overrides,
    run_id: str,
    default_python: str = "python",
    user_deepspeed: Optional[dict] = None,
    attempt: Attempt = FIRST,
    failed_hosts: tuple = (),
) -> LaunchPlan:
    """`attempt`: which attempt of the run this plan starts (planning/attempt.py: its port, hosts and
    rendezvous id); attempt 1 is the run as submitted. `failed_hosts`: ((host, why), ...) that caused a failure
    lately (planning/health.py), read from the records by the caller."""
    if not RUN_ID_PATTERN.fullmatch(run_id):
        raise KitError(f"run id {run_id!r}: use letters, digits, '.', '_' and '-' only")
    job, cluster = apply_overrides(job, cluster, overrides)
    placement: Placement = registry.placement(cluster.backend)
    check_limits(job)
    placed = placement.place(job, cluster, dict(failed_hosts))
    cluster, notes = placed.cluster, placed.notes
    shape = resolve_shape(job, cluster, placed.hosts)
    # A scheduler that requeues the job itself runs the same script again (its ranks and master resolved anew
    # in the new allocation): its attempt k is attempt 1's plan.
    changed = Attempt() if placement.restarts_in_place else attempt
    hosts, spares = replace_lost(shape.hosts, spare_hosts(job, cluster), changed.lost_hosts)
    run_dir = posixpath.join(cluster.run_root, run_id)
    port = attempt_port(master_port(cluster.master_port, run_id), changed.number)
    section, files = _strategy_section(job, shape, run_dir, user_deepspeed)
    env = {**node_env(job, cluster, shape, run_id), **rdzv_env(changed.number)}
    secrets = secret_names(job, env)
    layout = placement.layout(cluster, hosts, run_dir, shape.gpus_per_node)
    master = layout.master
    ctx = (cluster.python or default_python, run_dir, layout, port, section, placement)
    nodes = tuple(_node(job, cluster, shape, rank, host, env, secrets, files, ctx) for rank, host in enumerate(hosts))
    added, submission = placement.submission(
        cluster,
        run_id=run_id,
        job_name=job.name,
        nodes=shape.nodes,
        gpus=shape.gpus_per_node,
        run_dir=run_dir,
        node_command=nodes[0].command,
    )
    files.update(added)
    world = World(
        num_machines=shape.nodes,
        procs_per_node=shape.procs_per_node,
        world_size=shape.world_size,
        device=shape.device,
        strategy=job.strategy,
        mixed_precision=job.mixed_precision,
        master_addr=master,
        master_port=port,
        pipeline_stages=job.pipeline_stages,
        pipeline_microbatches=shape.pipeline_microbatches,
    )
    return LaunchPlan(
        run_id=run_id,
        job_name=job.name,
        backend=cluster.backend,
        cluster_name=cluster.name,
        run_dir=run_dir,
        world=world,
        nodes=nodes,
        files=dict(sorted(files.items())),
        submission=submission,
        runtime_vars=placement.runtime_vars,
        inherit=INHERIT,
        teardown_grace=cluster.teardown_grace,
        limits=Limits(
            rendezvous_timeout=job.timeouts.rendezvous, hang_timeout=job.timeouts.hang, restarts=job.restarts
        ),
        spare_hosts=tuple((h.name, h.address or h.name) for h in spares),
        attempt=attempt.number,
        env_check=job.env_check,
        notes=notes,
    )

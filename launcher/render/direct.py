"""A world of one process: no launcher between the node and its rank.

`accelerate launch` runs a single process through its "simple launcher", a subprocess that turns the rank's exit
code into 1 and its death by a signal into a traceback of accelerate's own (`CalledProcessError ... died with
<Signals.SIGKILL: 9>`), and costs an extra Python start with accelerate imported. So a one-process node execs the
entrypoint itself with the environment that launcher would give it (its `prepare_simple_launcher_cmd_env`; tests
compare both): the node's exit status is the rank's. Pure: no accelerate import here (kit's dry-run stays fast)."""

from launcher.render.accelerate import LaunchSettings


def is_direct(distributed_type: str, world_size: int) -> bool:
    """accelerate would start this world with its simple launcher: one process, nothing distributed."""
    return distributed_type == "NO" and world_size == 1


def direct_argv(s: LaunchSettings) -> tuple[str, ...]:
    return (s.python, *s.entry()) + s.args


def direct_env(s: LaunchSettings, threads_at_node: bool) -> dict[str, str]:
    """What accelerate's simple launcher puts in its process's environment for these settings. `threads_at_node`:
    the node sizes OMP_NUM_THREADS itself at start (render/shell.threads_lines)."""
    env = {
        # kit's node environment says "1" for a CPU world (planning/env.py); accelerate's "True" means the same.
        "ACCELERATE_USE_CPU": "1" if s.use_cpu else "False",
        "ACCELERATE_MIXED_PRECISION": s.mixed_precision,
        "ACCELERATE_DYNAMO_BACKEND": (s.dynamo_backend or "no").upper(),
        "ACCELERATE_DYNAMO_MODE": "default",
        "ACCELERATE_DYNAMO_USE_FULLGRAPH": "False",
        "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION": "False",
    }
    if s.use_cpu:
        env.update({"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"})
    if s.gpu_ids is not None:
        env["CUDA_VISIBLE_DEVICES"] = s.gpu_ids
    if not threads_at_node:
        env["OMP_NUM_THREADS"] = str(s.cpu_threads_per_process or 1)
    return env


__all__ = ["is_direct", "direct_argv", "direct_env"]

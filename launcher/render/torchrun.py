"""The `torchrun` argv and environment for one node (job `launcher: torchrun`).

`accelerate launch` is a front end to torchrun: it turns its config into torchrun's world flags and into
environment variables (`ACCELERATE_*`, `FSDP_*`) that an `Accelerator` reads in each rank. With torchrun as the
node's launcher, kit hands the job the same variables accelerate's launcher would (its `prepare_multi_gpu_env` and
`prepare_deepspeed_cmd_env`; tests compare both), so the training code sees the same mixed precision, DeepSpeed or
FSDP settings either way. Pure: no accelerate import here (kit's dry-run stays fast)."""

from typing import Optional

from launcher.render.accelerate import LaunchSettings


def torchrun_argv(s: LaunchSettings, procs_per_node: int) -> tuple[str, ...]:
    argv = [
        s.python,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        str(s.num_machines),
        "--node-rank",
        s.machine_rank,
        "--nproc-per-node",
        str(procs_per_node),
        "--master-addr",
        s.master_addr,
        "--master-port",
        str(s.master_port),
        "--rdzv-backend",
        "static",
        "--max-restarts",
        "0",  # kit restarts the world itself (job `restarts`), every node at once
    ]
    if s.rank_log_dir is not None:
        argv += ["--tee", "3", "--log-dir", s.rank_log_dir]
    argv += s.entry()
    return tuple(argv) + s.args


def _flag(value) -> str:
    return str(value).lower()


def _fsdp_env(cfg: dict) -> dict[str, str]:
    """accelerate's FSDP_* variables for an fsdp_config section (its launcher's defaults where the section is
    silent)."""
    env = {
        "ACCELERATE_USE_FSDP": "true",
        "FSDP_VERSION": str(cfg.get("fsdp_version", 1)),
        "FSDP_SHARDING_STRATEGY": "FULL_SHARD",
        "FSDP_RESHARD_AFTER_FORWARD": _flag(cfg.get("fsdp_reshard_after_forward", True)),
        "FSDP_OFFLOAD_PARAMS": _flag(cfg.get("fsdp_offload_params", False)),
        "FSDP_MIN_NUM_PARAMS": str(cfg.get("fsdp_min_num_params", 100000000)),
        "FSDP_FORWARD_PREFETCH": "false",
        "FSDP_USE_ORIG_PARAMS": _flag(cfg.get("fsdp_use_orig_params", True)),
        "FSDP_CPU_RAM_EFFICIENT_LOADING": _flag(cfg.get("fsdp_cpu_ram_efficient_loading", True)),
        "FSDP_SYNC_MODULE_STATES": _flag(cfg.get("fsdp_sync_module_states", True)),
        "FSDP_ACTIVATION_CHECKPOINTING": _flag(cfg.get("fsdp_activation_checkpointing", False)),
        "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD": "false",
    }
    for key, name in (
        ("fsdp_auto_wrap_policy", "FSDP_AUTO_WRAP_POLICY"),
        ("fsdp_transformer_layer_cls_to_wrap", "FSDP_TRANSFORMER_CLS_TO_WRAP"),
        ("fsdp_backward_prefetch", "FSDP_BACKWARD_PREFETCH"),
        ("fsdp_state_dict_type", "FSDP_STATE_DICT_TYPE"),
    ):
        if cfg.get(key) is not None:
            env[name] = str(cfg[key])
    return env


def _deepspeed_env(cfg: dict) -> dict[str, str]:
    env = {
        "ACCELERATE_USE_DEEPSPEED": "true",
        # The accelerate-config fields that carried DeepSpeed settings (accelerate checks them against the JSON).
        "ACCELERATE_CONFIG_DS_FIELDS": ",".join(cfg),
    }
    if cfg.get("deepspeed_config_file") is not None:
        env["ACCELERATE_DEEPSPEED_CONFIG_FILE"] = str(cfg["deepspeed_config_file"])
    if cfg.get("zero3_init_flag") is not None:
        env["ACCELERATE_DEEPSPEED_ZERO3_INIT"] = _flag(cfg["zero3_init_flag"])
    return env


def torchrun_env(s: LaunchSettings, section: Optional[tuple[str, dict]], threads_at_node: bool) -> dict[str, str]:
    """What accelerate's launcher would put in each rank's environment for these settings. `threads_at_node`: the
    node sizes OMP_NUM_THREADS itself at start (render/shell.threads_lines), so it is not fixed here."""
    env = {"ACCELERATE_MIXED_PRECISION": s.mixed_precision}
    if s.gpu_ids is not None:
        env["CUDA_VISIBLE_DEVICES"] = s.gpu_ids
    if section is not None and section[0] == "deepspeed_config":
        env.update(_deepspeed_env(section[1]))
        return env
    env.update(
        {
            "ACCELERATE_DYNAMO_BACKEND": (s.dynamo_backend or "no").upper(),
            "ACCELERATE_DYNAMO_MODE": "default",
            "ACCELERATE_DYNAMO_USE_FULLGRAPH": "False",
            "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION": "False",
        }
    )
    if section is not None and section[0] == "fsdp_config":
        env.update(_fsdp_env(section[1]))
    if not threads_at_node:
        env["OMP_NUM_THREADS"] = str(s.cpu_threads_per_process or 1)
    return env


__all__ = ["torchrun_argv", "torchrun_env"]

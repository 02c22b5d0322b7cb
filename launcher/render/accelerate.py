"""The Accelerate config YAML (its fsdp_config section from the job's fsdp options included) and the `accelerate
launch` argv for one node.

`accelerate launch --config_file` fills only flags whose argparse default is None from the YAML: settings such as
`rdzv_backend` and `same_network` in the YAML are silently ignored. So every multi-node setting is also passed
on the command line."""

from dataclasses import dataclass
from typing import Any, Optional

from launcher.spec.job import FsdpOptions

_DIST_FLAGS = {"MULTI_GPU": "--multi_gpu", "DEEPSPEED": "--use_deepspeed", "FSDP": "--use_fsdp", "NO": None}


def distributed_type(strategy: str, world_size: int) -> str:
    if strategy == "deepspeed":
        return "DEEPSPEED"
    if strategy == "fsdp":
        return "FSDP"
    # MULTI_GPU also on CPU (with use_cpu): MULTI_CPU forms no world through `accelerate launch`.
    return "MULTI_GPU" if world_size > 1 else "NO"


@dataclass(frozen=True)
class LaunchSettings:
    python: str
    config_file: str
    distributed_type: str
    use_cpu: bool
    num_machines: int
    world_size: int
    machine_rank: str  # a number, or a runtime reference such as ${SLURM_NODEID}
    master_addr: str
    master_port: int
    mixed_precision: str
    cpu_threads_per_process: Optional[int]
    dynamo_backend: Optional[str]
    gpu_ids: Optional[str]  # a local node's slice of this machine's GPUs ("2,3")
    rank_log_dir: Optional[str]  # torchrun tees each rank's output here (and prefixes lines)
    module: Optional[str]
    script: Optional[str]
    args: tuple[str, ...]

    def entry(self) -> tuple[str, ...]:
        """What the node runs: `-m MODULE`, or the script (a job's entrypoint is exactly one, spec/job.py)."""
        if self.module:
            return ("-m", self.module)
        assert self.script is not None  # no module: a script (spec/job.py's Entrypoint checks one is set)
        return (self.script,)


def accelerate_config(s: LaunchSettings, section: Optional[tuple[str, dict]]) -> dict:
    """The YAML content; loadable by accelerate's own ClusterConfig."""
    cfg = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": s.distributed_type,
        "downcast_bf16": False,
        "enable_cpu_affinity": False,
        "machine_rank": int(s.machine_rank) if s.machine_rank.isdigit() else 0,
        "main_process_port": s.master_port,
        "main_training_function": "main",
        "mixed_precision": s.mixed_precision,
        "num_machines": s.num_machines,
        "num_processes": s.world_size,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": s.use_cpu,
    }
    if s.gpu_ids is not None:
        cfg["gpu_ids"] = s.gpu_ids
    if not s.master_addr.startswith("${"):
        cfg["main_process_ip"] = s.master_addr
    if section is not None:
        cfg[section[0]] = section[1]
    if s.dynamo_backend is not None:
        cfg["dynamo_config"] = {"dynamo_backend": s.dynamo_backend.upper()}
    return cfg


def launch_argv(s: LaunchSettings) -> tuple[str, ...]:
    argv = [s.python, "-m", "accelerate.commands.launch", "--config_file", s.config_file]
    flag = _DIST_FLAGS[s.distributed_type]
    if flag:
        argv.append(flag)
    argv += [
        "--num_machines",
        str(s.num_machines),
        "--machine_rank",
        s.machine_rank,
        "--main_process_ip",
        s.master_addr,
        "--main_process_port",
        str(s.master_port),
        "--num_processes",
        str(s.world_size),
        "--rdzv_backend",
        "static",
        "--same_network",
        "--mixed_precision",
        s.mixed_precision,
    ]
    if s.gpu_ids is not None:
        argv += ["--gpu_ids", s.gpu_ids]
    if s.cpu_threads_per_process is not None:
        argv += ["--num_cpu_threads_per_process", str(s.cpu_threads_per_process)]
    if s.dynamo_backend is not None:
        argv += ["--dynamo_backend", s.dynamo_backend]
    if s.rank_log_dir is not None:
        argv += ["--tee", "3", "--log_dir", s.rank_log_dir]
    argv += s.entry()
    return tuple(argv) + s.args


# accelerate's fsdp_config section from a job's fsdp options.


def fsdp_config(opts: FsdpOptions) -> dict:
    cfg: dict[str, Any] = {
        "fsdp_version": opts.version,
        "fsdp_auto_wrap_policy": opts.auto_wrap_policy,
        "fsdp_state_dict_type": opts.state_dict_type,
        "fsdp_offload_params": opts.cpu_offload,
        "fsdp_activation_checkpointing": opts.activation_checkpointing,
        "fsdp_cpu_ram_efficient_loading": False,
    }
    if opts.version == 2:
        cfg["fsdp_reshard_after_forward"] = opts.reshard_after_forward
    else:
        cfg["fsdp_reshard_after_forward"] = opts.sharding
        cfg["fsdp_backward_prefetch"] = "BACKWARD_PRE"
        cfg["fsdp_sync_module_states"] = True
        # Parameter groups (no weight decay on bias/LayerNorm) need original parameters under FSDP1.
        cfg["fsdp_use_orig_params"] = True
    if opts.transformer_layer_cls is not None:
        cfg["fsdp_transformer_layer_cls_to_wrap"] = opts.transformer_layer_cls
    if opts.min_num_params is not None:
        cfg["fsdp_min_num_params"] = opts.min_num_params
    return cfg

"""accelerate's fsdp_config section from a job's fsdp options."""

from typing import Any

from launcher.spec.job import FsdpOptions


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

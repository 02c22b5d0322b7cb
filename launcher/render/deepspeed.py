"""The DeepSpeed JSON kit generates from a job's deepspeed options."""

from typing import Any

from launcher.spec.job import DeepSpeedOptions, JobSpec


def _offload(device: str, nvme_path, pin: bool) -> dict:
    out: dict[str, Any] = {"device": device}
    if device == "nvme":
        out["nvme_path"] = nvme_path
    if device != "none":
        out["pin_memory"] = pin
    return out


def _zero(ds: DeepSpeedOptions, on_gpu: bool) -> dict:
    zero: dict[str, Any] = {"stage": ds.zero_stage}
    if ds.zero_stage >= 1:
        zero["contiguous_gradients"] = True
        zero["overlap_comm"] = on_gpu
    if ds.offload_optimizer != "none":
        zero["offload_optimizer"] = _offload(ds.offload_optimizer, ds.nvme_path, on_gpu)
    if ds.offload_param != "none":
        zero["offload_param"] = _offload(ds.offload_param, ds.nvme_path, on_gpu)
    if ds.zero_stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = ds.zero3_save_16bit_model
    return zero


def deepspeed_config(job: JobSpec, world_size: int, grad_accum: int, on_gpu: bool) -> dict:
    """Batch sizes are "auto" (accelerate fills them from the dataloader) unless the job pins them."""
    ds = job.deepspeed
    micro = job.batch_size_per_device
    config: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": micro if micro else "auto",
        "train_batch_size": micro * grad_accum * world_size if micro else "auto",
        "gradient_accumulation_steps": grad_accum,
        "zero_optimization": _zero(ds, on_gpu),
        "bf16": {"enabled": job.mixed_precision == "bf16"},
        "fp16": {"enabled": job.mixed_precision == "fp16"},
        # The training module brings its own torch optimizer; let DeepSpeed wrap it.
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 1000,
        "wall_clock_breakdown": False,
    }
    if ds.offload_optimizer != "none":
        # Keep the client optimizer instead of forcing DeepSpeedCPUAdam (a compiled op).
        config["zero_force_ds_cpu_optimizer"] = False
    if ds.gradient_clipping is not None:
        config["gradient_clipping"] = ds.gradient_clipping
    return config

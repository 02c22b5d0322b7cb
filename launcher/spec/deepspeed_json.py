"""kit's own schema for DeepSpeed JSON: DeepSpeed ignores unknown top-level keys, kit does not."""

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, ValidationError

from launcher.errors import KitError
from launcher.spec.errors import one_line

Auto = Literal["auto"]
Count = Union[int, Auto]


class _Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Offload(_Forbid):
    device: Literal["none", "cpu", "nvme"]
    nvme_path: Optional[str] = None
    pin_memory: Optional[bool] = None
    buffer_count: Optional[int] = None
    buffer_size: Optional[Count] = None
    max_in_cpu: Optional[Count] = None
    fast_init: Optional[bool] = None
    ratio: Optional[float] = None


class Zero(_Forbid):
    stage: Literal[0, 1, 2, 3]
    contiguous_gradients: Optional[bool] = None
    overlap_comm: Optional[bool] = None
    reduce_scatter: Optional[bool] = None
    reduce_bucket_size: Optional[Count] = None
    allgather_partitions: Optional[bool] = None
    allgather_bucket_size: Optional[Count] = None
    round_robin_gradients: Optional[bool] = None
    offload_optimizer: Optional[Offload] = None
    offload_param: Optional[Offload] = None
    sub_group_size: Optional[Count] = None
    stage3_prefetch_bucket_size: Optional[Count] = None
    stage3_param_persistence_threshold: Optional[Count] = None
    stage3_max_live_parameters: Optional[Count] = None
    stage3_max_reuse_distance: Optional[Count] = None
    stage3_gather_16bit_weights_on_model_save: Optional[bool] = None
    ignore_unused_parameters: Optional[bool] = None
    load_from_fp32_weights: Optional[bool] = None
    elastic_checkpoint: Optional[bool] = None
    zero_hpz_partition_size: Optional[int] = None
    zero_quantized_weights: Optional[bool] = None
    zero_quantized_gradients: Optional[bool] = None
    mics_shard_size: Optional[int] = None
    memory_efficient_linear: Optional[bool] = None


class Precision(_Forbid):
    enabled: Union[bool, Auto]
    loss_scale: Optional[float] = None
    initial_scale_power: Optional[int] = None
    loss_scale_window: Optional[int] = None
    hysteresis: Optional[int] = None
    consecutive_hysteresis: Optional[bool] = None
    min_loss_scale: Optional[float] = None
    auto_cast: Optional[bool] = None
    immediate_grad_update: Optional[bool] = None


class TypedParams(_Forbid):
    type: str
    params: dict[str, Any] = {}


class DeepSpeedJson(_Forbid):
    train_batch_size: Optional[Count] = None
    train_micro_batch_size_per_gpu: Optional[Count] = None
    gradient_accumulation_steps: Optional[Count] = None
    gradient_clipping: Optional[Union[float, Auto]] = None
    zero_optimization: Optional[Zero] = None
    bf16: Optional[Precision] = None
    fp16: Optional[Precision] = None
    optimizer: Optional[TypedParams] = None
    scheduler: Optional[TypedParams] = None
    zero_allow_untested_optimizer: Optional[bool] = None
    zero_force_ds_cpu_optimizer: Optional[bool] = None
    steps_per_print: Optional[int] = None
    wall_clock_breakdown: Optional[bool] = None
    dump_state: Optional[bool] = None
    memory_breakdown: Optional[bool] = None
    prescale_gradients: Optional[bool] = None
    gradient_predivide_factor: Optional[float] = None
    sparse_gradients: Optional[bool] = None
    communication_data_type: Optional[str] = None
    seq_parallel_communication_data_type: Optional[str] = None
    activation_checkpointing: Optional[dict[str, Any]] = None
    flops_profiler: Optional[dict[str, Any]] = None
    tensorboard: Optional[dict[str, Any]] = None
    wandb: Optional[dict[str, Any]] = None
    csv_monitor: Optional[dict[str, Any]] = None
    comms_logger: Optional[dict[str, Any]] = None
    aio: Optional[dict[str, Any]] = None
    checkpoint: Optional[dict[str, Any]] = None
    data_types: Optional[dict[str, Any]] = None
    torch_autocast: Optional[dict[str, Any]] = None
    data_efficiency: Optional[dict[str, Any]] = None
    compression_training: Optional[dict[str, Any]] = None
    elasticity: Optional[dict[str, Any]] = None
    autotuning: Optional[dict[str, Any]] = None


def validate_deepspeed_json(data: Any, source: str) -> DeepSpeedJson:
    if not isinstance(data, dict):
        raise KitError(f"{source}: expected a JSON object at the top level")
    try:
        return DeepSpeedJson.model_validate(data)
    except ValidationError as e:
        raise KitError(one_line(e, DeepSpeedJson, source)) from None


def _check_batch(cfg: DeepSpeedJson, world: int, source: str) -> None:
    total, micro, accum = cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps
    if isinstance(total, int) and isinstance(micro, int) and isinstance(accum, int) and total != micro * accum * world:
        raise KitError(
            f"{source}: train_batch_size {total} != train_micro_batch_size_per_gpu {micro} x "
            f"gradient_accumulation_steps {accum} x world size {world} = {micro * accum * world}"
        )


def _check_precision(cfg: DeepSpeedJson, mixed_precision: str, source: str) -> None:
    for name in ("bf16", "fp16"):
        section = getattr(cfg, name)
        if section is None or section.enabled == "auto":
            continue
        # An explicit false is kept by accelerate (only "auto" is filled): it would train in fp32 silently.
        if section.enabled != (mixed_precision == name):
            raise KitError(
                f"{source}: {name}.enabled is {str(section.enabled).lower()} but the job's "
                f'mixed_precision is {mixed_precision!r}; make them agree (or use "auto")'
            )


def _check_job_batch(cfg: DeepSpeedJson, job, source: str) -> None:
    """Batch fields the job sets explicitly must match the JSON's numbers, not be silently ignored."""
    pairs = [
        ("batch_size_per_device", "train_micro_batch_size_per_gpu"),
        ("gradient_accumulation_steps", "gradient_accumulation_steps"),
    ]
    for job_field, ds_field in pairs:
        if job_field not in job.model_fields_set:
            continue
        ours, theirs = getattr(job, job_field), getattr(cfg, ds_field)
        if isinstance(theirs, int) and theirs != ours:
            raise KitError(
                f"{source}: {ds_field} is {theirs} but the job's {job_field} is {ours}; "
                f'make them agree (or use "auto")'
            )


def check_user_deepspeed(data: Optional[dict], job, world: int) -> dict:
    """A user's own DeepSpeed JSON, checked against the job before it is shipped unchanged."""
    source = job.deepspeed.config_file
    if data is None:
        raise KitError(f"deepspeed.config_file {source}: file content was not loaded")
    cfg = validate_deepspeed_json(data, source)
    _check_batch(cfg, world, source)
    _check_job_batch(cfg, job, source)
    _check_precision(cfg, job.mixed_precision, source)
    return data

"""Does the world this rank joined match the world kit planned?

Several accelerate CPU paths (MULTI_CPU without mpirun, --cpu, --multi_gpu without the CPU flag, FSDP on CPU)
start every process alone and exit 0 after training on a slice of nothing.  Every rank therefore compares what it
sees with the plan that kit passes in KIT_EXPECTED_* variables, and the run fails at once on any mismatch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

PREFIX = "world check failed: "


class WorldCheckError(RuntimeError):
    pass


@dataclass(frozen=True)
class Expected:
    world_size: int
    num_machines: int | None = None
    strategy: str | None = None  # ddp | deepspeed | fsdp
    mixed_precision: str | None = None  # no | fp16 | bf16
    device: str | None = None  # cpu | cuda


@dataclass(frozen=True)
class Actual:
    world_size: int  # accelerator.num_processes
    rank: int  # accelerator.process_index
    distributed_type: str  # accelerator.distributed_type, e.g. "MULTI_GPU", "DEEPSPEED", "NO"
    mixed_precision: str
    device: str  # "cpu" or "cuda"
    env_world_size: int | None = None  # WORLD_SIZE set by torchrun
    env_rank: int | None = None  # RANK set by torchrun
    env_local_world_size: int | None = None  # LOCAL_WORLD_SIZE set by torchrun
    engaged: str | None = None  # strategy seen on the prepared model: ddp|deepspeed|fsdp|none; None = not yet
    zero_stage: int | None = None
    expected_zero_stage: int | None = None


def _int_env(env, name: str) -> int | None:
    value = env.get(name)
    return int(value) if value not in (None, "") else None


def expected_from_env(env=os.environ) -> Expected:
    """The plan from kit's variables; by hand (no KIT_*) a world of WORLD_SIZE (torchrun) or 1."""
    world = _int_env(env, "KIT_EXPECTED_WORLD_SIZE") or _int_env(env, "WORLD_SIZE") or 1
    return Expected(
        world_size=world,
        num_machines=_int_env(env, "KIT_EXPECTED_NUM_MACHINES"),
        strategy=env.get("KIT_EXPECTED_STRATEGY") or None,
        mixed_precision=env.get("KIT_EXPECTED_MIXED_PRECISION") or None,
        device=env.get("KIT_EXPECTED_DEVICE") or None,
    )


_TYPES = {
    "ddp": {"MULTI_GPU", "MULTI_CPU", "MULTI_XPU", "MULTI_NPU", "MULTI_MLU", "MULTI_MUSA", "MULTI_HPU"},
    "deepspeed": {"DEEPSPEED"},
    "fsdp": {"FSDP"},
}


def _strategy_mismatches(exp: Expected, act: Actual) -> list[str]:
    out = []
    if exp.strategy is None:
        return out
    if exp.strategy not in _TYPES:
        return [f"unknown expected strategy {exp.strategy!r} (ddp, deepspeed or fsdp)"]
    # A world of 1 under DDP legitimately has no distributed type; DeepSpeed and FSDP always have one.
    single_ddp = exp.strategy == "ddp" and exp.world_size == 1
    if not single_ddp and act.distributed_type not in _TYPES[exp.strategy]:
        out.append(f"strategy {exp.strategy} planned but accelerate's distributed type is {act.distributed_type}")
    if act.engaged is not None and not single_ddp and act.engaged != exp.strategy:
        out.append(f"strategy {exp.strategy} planned but the prepared model is wrapped as {act.engaged}")
    if act.expected_zero_stage is not None and act.zero_stage is not None and act.zero_stage != act.expected_zero_stage:
        out.append(
            f"DeepSpeed ZeRO stage {act.expected_zero_stage} configured but the engine runs stage {act.zero_stage}"
        )
    return out


def find_mismatches(exp: Expected, act: Actual) -> list[str]:
    """Every way the actual world differs from the planned one (empty list: all good)."""
    out = []
    if act.world_size != exp.world_size:
        out.append(f"world size {act.world_size} but {exp.world_size} planned")
    if act.env_world_size is not None and act.env_world_size != act.world_size:
        out.append(
            f"WORLD_SIZE={act.env_world_size} in the environment but accelerate sees {act.world_size} process(es)"
        )
    if not 0 <= act.rank < max(exp.world_size, 1):
        out.append(f"rank {act.rank} outside the planned world of {exp.world_size}")
    if act.env_rank is not None and act.env_rank != act.rank:
        out.append(f"RANK={act.env_rank} in the environment but accelerate says rank {act.rank}")
    if exp.world_size > 1 and act.distributed_type == "NO":
        out.append(f"{exp.world_size} processes planned but accelerate runs this process alone (distributed type NO)")
    if exp.num_machines and act.env_local_world_size and act.env_world_size:
        machines = act.env_world_size // act.env_local_world_size
        if machines != exp.num_machines:
            out.append(f"{machines} machine(s) joined but {exp.num_machines} planned")
    if exp.mixed_precision and act.mixed_precision != exp.mixed_precision:
        out.append(f"mixed precision {act.mixed_precision} but {exp.mixed_precision} planned")
    if exp.device and act.device != exp.device:
        out.append(f"device {act.device} but {exp.device} planned")
    return out + _strategy_mismatches(exp, act)


def engaged_strategy(model) -> str:
    """How accelerate wrapped the prepared model."""
    name = type(model).__name__
    if name == "DeepSpeedEngine":
        return "deepspeed"
    if name in ("FullyShardedDataParallel",) or "FSDP" in name or hasattr(model, "_fsdp_wrapped_module"):
        return "fsdp"
    if name == "DistributedDataParallel":
        return "ddp"
    return "none"


def actual_from_accelerator(accelerator, env=os.environ, model=None) -> Actual:
    engaged = zero_stage = expected_stage = None
    if model is not None:
        engaged = engaged_strategy(model)
        if engaged == "none" and _is_fsdp2(model):
            engaged = "fsdp"
        if engaged == "deepspeed":
            zero_stage = int(model.zero_optimization_stage())
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    if plugin is not None:
        expected_stage = int(plugin.deepspeed_config.get("zero_optimization", {}).get("stage", 0))
    return Actual(
        world_size=accelerator.num_processes,
        rank=accelerator.process_index,
        distributed_type=str(accelerator.distributed_type).split(".")[-1],
        mixed_precision=str(accelerator.mixed_precision),
        device=accelerator.device.type,
        env_world_size=_int_env(env, "WORLD_SIZE"),
        env_rank=_int_env(env, "RANK"),
        env_local_world_size=_int_env(env, "LOCAL_WORLD_SIZE"),
        engaged=engaged,
        zero_stage=zero_stage,
        expected_zero_stage=expected_stage,
    )


def _is_fsdp2(model) -> bool:
    # FSDP2 (fully_shard) changes the module's class to FSDP<Name>; parameters become DTensors.
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        return False
    return any(isinstance(p, DTensor) for p in model.parameters())


def check(accelerator, model=None, env=os.environ) -> None:
    """Raise WorldCheckError naming every mismatch; call before prepare() and again with the prepared model."""
    problems = find_mismatches(expected_from_env(env), actual_from_accelerator(accelerator, env, model))
    if problems:
        raise WorldCheckError(PREFIX + "; ".join(problems) + f" (rank {accelerator.process_index})")

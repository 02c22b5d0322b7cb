"""Generated DeepSpeed JSON, checked by DeepSpeed's own config classes; kit's stricter schema for user JSON."""

import json

import pytest
from deepspeed.runtime import config as ds_config_module
from deepspeed.runtime.config import DeepSpeedConfig

from launcher.errors import KitError
from launcher.spec.deepspeed_json import validate_deepspeed_json
from tests.launcher.planning import LOCAL_CPU, SLURM_GPU, SSH_GPU, cluster, job, plan

MICRO = 3  # what accelerate would put for "auto" from the dataloader


class FakeMpu:
    """Just enough of a model-parallel unit for DeepSpeedConfig to take the data-parallel world size from."""

    def __init__(self, world: int):
        self.world = world

    def get_data_parallel_world_size(self):
        return self.world

    def get_data_parallel_rank(self):
        return 0

    def get_model_parallel_world_size(self):
        return 1

    def get_model_parallel_rank(self):
        return 0


@pytest.fixture
def deepspeed_config(monkeypatch):
    """DeepSpeedConfig(dict, world): without an initialised process group DeepSpeed asks dist.get_rank(), fails and
    falls back to world size 1, ignoring the mpu; pretend to be rank 0 so the mpu's world size is used."""
    monkeypatch.setattr(ds_config_module.dist, "get_rank", lambda group=None: 0)

    def make(config: dict, world: int) -> DeepSpeedConfig:
        cfg = DeepSpeedConfig(config, mpu=FakeMpu(world))
        assert cfg.world_size == world
        return cfg

    return make


def concrete(ds: dict, world: int, micro: int = MICRO) -> dict:
    """Fill "auto" batch values the way accelerate does: micro from the dataloader, total = micro x accum x world."""
    out = dict(ds)
    if out["train_micro_batch_size_per_gpu"] == "auto":
        out["train_micro_batch_size_per_gpu"] = micro
    micro_ = out["train_micro_batch_size_per_gpu"]
    if out["train_batch_size"] == "auto":
        out["train_batch_size"] = micro_ * out["gradient_accumulation_steps"] * world
    return out


def generated(p) -> dict:
    path = f"{p.run_dir}/deepspeed.json"
    assert path in p.files
    return json.loads(p.files[path])


# id: (cluster base, deepspeed options, mixed precision, overrides)
CASES = {
    "ssh-zero0-no": (SSH_GPU, {"zero_stage": 0}, "no", {"nodes": 2}),
    "ssh-zero1-fp16": (SSH_GPU, {"zero_stage": 1}, "fp16", {"nodes": 2}),
    "ssh-zero2-bf16": (SSH_GPU, {"zero_stage": 2}, "bf16", {"nodes": 2}),
    "ssh-zero2-offload-opt-fp16": (SSH_GPU, {"zero_stage": 2, "offload_optimizer": "cpu"}, "fp16", {"nodes": 2}),
    "slurm-zero3-bf16": (SLURM_GPU, {"zero_stage": 3}, "bf16", {"nodes": 3}),
    "slurm-zero3-offload-bf16": (SLURM_GPU, {"zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu"},
                                 "bf16", {"nodes": 2}),
    "slurm-zero3-nvme-no": (SLURM_GPU, {"zero_stage": 3, "offload_optimizer": "nvme", "offload_param": "nvme",
                                        "nvme_path": "/local/nvme"}, "no", {"nodes": 2}),
    "local-cpu-zero2-no": (LOCAL_CPU, {"zero_stage": 2}, "no", {"nodes": 2}),
    "local-cpu-zero3-offload-bf16": (LOCAL_CPU, {"zero_stage": 3, "offload_optimizer": "cpu",
                                                 "offload_param": "cpu"}, "bf16", {"nodes": 2, "procs_per_node": 2}),
}


def _plan(case, **job_fields):
    base, ds, mp, overrides = CASES[case]
    return plan(job(strategy="deepspeed", deepspeed=ds, mixed_precision=mp, **job_fields), cluster(base), **overrides)


def _offload_device(section):
    return "none" if section is None else str(getattr(section.device, "value", section.device))


@pytest.mark.parametrize("case", CASES)
def test_generated_json_passes_deepspeed_config(case, deepspeed_config):
    _, ds, mp, _ = CASES[case]
    p = _plan(case)
    world = p.world.world_size
    raw = generated(p)
    assert raw["train_micro_batch_size_per_gpu"] == raw["train_batch_size"] == "auto"
    cfg = deepspeed_config(concrete(raw, world), world)
    assert cfg.zero_optimization_stage == ds["zero_stage"]
    assert _offload_device(cfg.zero_config.offload_optimizer) == ds.get("offload_optimizer", "none")
    assert _offload_device(cfg.zero_config.offload_param) == ds.get("offload_param", "none")
    assert cfg.bfloat16_config.enabled is (mp == "bf16")
    assert cfg.float16_config.enabled is (mp == "fp16")
    assert cfg.train_batch_size == MICRO * cfg.gradient_accumulation_steps * world


@pytest.mark.parametrize("case", CASES)
def test_generated_json_passes_kits_own_schema(case):
    validate_deepspeed_json(generated(_plan(case)), "generated")


@pytest.mark.parametrize("case", ["ssh-zero2-bf16", "slurm-zero3-offload-bf16", "local-cpu-zero2-no"])
def test_pinned_batch_sizes_need_no_substitution(case, deepspeed_config):
    p = _plan(case, batch_size_per_device=4, gradient_accumulation_steps=2)
    raw = generated(p)
    world = p.world.world_size
    assert raw["train_micro_batch_size_per_gpu"] == 4
    assert raw["train_batch_size"] == 4 * 2 * world
    cfg = deepspeed_config(raw, world)
    assert (cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps) == (4, 2)


def test_global_batch_size_sets_accumulation(deepspeed_config):
    p = _plan("slurm-zero3-bf16", batch_size_per_device=2, global_batch_size=96)  # 3 nodes x 4 GPUs: 96 / (2 x 12)
    raw = generated(p)
    assert (raw["train_batch_size"], raw["gradient_accumulation_steps"]) == (96, 4)
    deepspeed_config(raw, 12)


def test_world_size_really_reaches_deepspeed(deepspeed_config):
    # A total that forgets the world size must fail, or the checks above prove nothing.
    raw = concrete(generated(_plan("ssh-zero2-bf16")), world=1)
    with pytest.raises(AssertionError, match="train_batch_size"):
        deepspeed_config(raw, 16)


def test_offload_pins_memory_only_on_gpu():
    gpu = generated(_plan("slurm-zero3-offload-bf16"))["zero_optimization"]
    cpu = generated(_plan("local-cpu-zero3-offload-bf16"))["zero_optimization"]
    assert gpu["offload_param"]["pin_memory"] is True and cpu["offload_param"]["pin_memory"] is False
    assert gpu["overlap_comm"] is True and cpu["overlap_comm"] is False


def test_gradient_clipping_reaches_json(deepspeed_config):
    p = plan(job(strategy="deepspeed", deepspeed={"zero_stage": 2, "gradient_clipping": 0.5}), cluster(SSH_GPU))
    raw = generated(p)
    assert deepspeed_config(concrete(raw, 8), 8).gradient_clipping == 0.5


# --- DeepSpeed ignores what kit refuses ------------------------------------------------------------------------

def test_deepspeed_silently_ignores_unknown_top_level_key(deepspeed_config):
    typo = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
            "zero_optimisation": {"stage": 3}}
    assert deepspeed_config(typo, 8).zero_optimization_stage == 0  # the typo'd section is dropped, ZeRO off


def test_kit_schema_rejects_unknown_top_level_key():
    with pytest.raises(KitError, match="unknown key 'zero_optimisation'"):
        validate_deepspeed_json({"zero_optimisation": {"stage": 3}}, "ds.json")


@pytest.mark.parametrize("bad, field", [
    ({"zero_optimization": {"stage": 3, "offload_params": {"device": "cpu"}}}, "zero_optimization.offload_params"),
    ({"zero_optimization": {"stage": 5}}, "zero_optimization.stage"),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": "gpu"}}}, "offload_param.device"),
    ({"bf16": {"enabled": "sometimes"}}, "bf16.enabled"),
    ({"train_batch_size": "lots"}, "train_batch_size"),
])
def test_kit_schema_rejects_bad_sections(bad, field):
    with pytest.raises(KitError, match=field.replace(".", r"\.")):
        validate_deepspeed_json(bad, "ds.json")


def test_kit_schema_wants_an_object():
    with pytest.raises(KitError, match="JSON object"):
        validate_deepspeed_json([{"train_batch_size": 8}], "ds.json")


# --- a user's own JSON (deepspeed.config_file) ------------------------------------------------------------------

def _user_plan(user: dict, mp: str = "bf16"):
    # SSH_GPU, 2 nodes x 8 GPUs: world 16.
    j = job(strategy="deepspeed", mixed_precision=mp, deepspeed={"config_file": "my_ds.json"})
    return plan(j, cluster(SSH_GPU), nodes=2, user_deepspeed=user)


USER_OK = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
           "zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}


def test_user_json_is_shipped_unchanged(deepspeed_config):
    p = _user_plan(USER_OK)
    assert generated(p) == USER_OK
    deepspeed_config(generated(p), p.world.world_size)


def test_user_json_with_auto_batch_values_passes():
    _user_plan({**USER_OK, "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"})


def test_user_json_batch_arithmetic_mismatch_rejected(deepspeed_config):
    bad = {**USER_OK, "train_batch_size": 32}  # 2 x 2 x 16 = 64
    with pytest.raises(AssertionError):
        deepspeed_config(bad, 16)  # DeepSpeed would fail only at run time, on every rank
    with pytest.raises(KitError, match=r"my_ds\.json: train_batch_size 32 .* = 64"):
        _user_plan(bad)


def test_user_json_precision_mismatch_rejected():
    with pytest.raises(KitError, match=r"my_ds\.json: bf16\.enabled .* 'fp16'"):
        _user_plan(USER_OK, mp="fp16")
    with pytest.raises(KitError, match=r"fp16\.enabled"):
        _user_plan({**USER_OK, "bf16": {"enabled": False}, "fp16": {"enabled": True}}, mp="no")


def test_user_json_unknown_top_level_key_rejected():
    with pytest.raises(KitError, match="unknown key 'optimiser'"):
        _user_plan({**USER_OK, "optimiser": {"type": "AdamW"}})


def test_user_json_excludes_kit_deepspeed_options():
    with pytest.raises(Exception, match="config_file excludes zero_stage"):
        job(strategy="deepspeed", deepspeed={"config_file": "my_ds.json", "zero_stage": 3})


def test_user_json_disagreeing_with_job_batch_fields_rejected():
    j = job(strategy="deepspeed", mixed_precision="bf16", batch_size_per_device=8, gradient_accumulation_steps=1,
            deepspeed={"config_file": "my_ds.json"})
    with pytest.raises(KitError, match="train_micro_batch_size_per_gpu"):
        plan(j, cluster(SSH_GPU), nodes=2, user_deepspeed=USER_OK)  # JSON: micro 2, accumulation 2


def test_user_json_disabling_the_jobs_precision_rejected():
    with pytest.raises(KitError, match=r"bf16\.enabled"):
        _user_plan({**USER_OK, "bf16": {"enabled": False}}, mp="bf16")


@pytest.mark.parametrize("strategy", ["ddp", "deepspeed", "fsdp"])
def test_every_strategy_gets_the_same_accumulation_on_every_node(strategy):
    """One number: the env var on every node (what the training module counts with) and, under DeepSpeed, the JSON."""
    p = plan(job(strategy=strategy, gradient_accumulation_steps=2), cluster(SSH_GPU), nodes=2)
    assert [n.env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] for n in p.nodes] == ["2", "2"]
    if strategy == "deepspeed":
        assert generated(p)["gradient_accumulation_steps"] == 2

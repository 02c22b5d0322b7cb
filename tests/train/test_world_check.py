import pytest

from train import world_check as wc


def actual(**kw):
    base = dict(world_size=2, rank=0, distributed_type="MULTI_GPU", mixed_precision="no", device="cpu",
                env_world_size=2, env_rank=0, env_local_world_size=1, engaged=None)
    base.update(kw)
    return wc.Actual(**base)


EXP = wc.Expected(world_size=2, num_machines=2, strategy="ddp", mixed_precision="no", device="cpu")


def test_planned_world_passes():
    assert wc.find_mismatches(EXP, actual()) == []
    assert wc.find_mismatches(EXP, actual(engaged="ddp", rank=1, env_rank=1)) == []


def test_process_training_alone_is_caught():
    # MULTI_CPU without rendezvous / --cpu: each process sees a world of one and no distributed type.
    problems = wc.find_mismatches(EXP, actual(world_size=1, distributed_type="NO", env_world_size=None,
                                              env_rank=None, env_local_world_size=None))
    assert any("world size 1 but 2 planned" in p for p in problems)
    assert any("alone" in p for p in problems)
    assert any("strategy ddp planned" in p for p in problems)


def test_env_world_disagrees_with_accelerate():
    # --multi_gpu on CPU without the CPU flag: torchrun says 2, accelerate says 1.
    problems = wc.find_mismatches(wc.Expected(world_size=2), actual(world_size=1, distributed_type="NO"))
    assert any("WORLD_SIZE=2 in the environment but accelerate sees 1" in p for p in problems)


def test_by_hand_expects_torch_world_or_one():
    assert wc.expected_from_env({}).world_size == 1
    assert wc.expected_from_env({"WORLD_SIZE": "4"}).world_size == 4
    assert wc.expected_from_env({"KIT_EXPECTED_WORLD_SIZE": "8", "WORLD_SIZE": "4"}).world_size == 8
    single = actual(world_size=1, distributed_type="NO", env_world_size=None, env_rank=None,
                    env_local_world_size=None)
    assert wc.find_mismatches(wc.expected_from_env({}), single) == []


@pytest.mark.parametrize("field,value,needle", [
    ("mixed_precision", "bf16", "mixed precision bf16 but no planned"),
    ("device", "cuda", "device cuda but cpu planned"),
    ("env_local_world_size", 2, "1 machine(s) joined but 2 planned"),
    ("rank", 5, "rank 5 outside the planned world"),
    ("env_rank", 1, "RANK=1 in the environment but accelerate says rank 0"),
])
def test_each_mismatch_is_named(field, value, needle):
    assert any(needle in p for p in wc.find_mismatches(EXP, actual(**{field: value})))


def test_strategy_engaged():
    ds = wc.Expected(world_size=2, strategy="deepspeed")
    assert wc.find_mismatches(ds, actual(distributed_type="DEEPSPEED", engaged="deepspeed")) == []
    problems = wc.find_mismatches(ds, actual(distributed_type="MULTI_GPU", engaged="ddp"))
    assert "strategy deepspeed planned but accelerate's distributed type is MULTI_GPU" in problems
    assert "strategy deepspeed planned but the prepared model is wrapped as ddp" in problems
    fsdp = wc.Expected(world_size=2, strategy="fsdp")
    assert any("wrapped as none" in p for p in wc.find_mismatches(fsdp, actual(distributed_type="FSDP",
                                                                                  engaged="none")))
    stage = actual(distributed_type="DEEPSPEED", engaged="deepspeed", zero_stage=2, expected_zero_stage=3)
    assert any("ZeRO stage 3 configured but the engine runs stage 2" in p for p in wc.find_mismatches(ds, stage))
    assert any("unknown expected strategy" in p
               for p in wc.find_mismatches(wc.Expected(world_size=2, strategy="horovod"), actual()))


def test_engaged_strategy_names():
    import torch

    assert wc.engaged_strategy(torch.nn.Linear(1, 1)) == "none"

    class DistributedDataParallel(torch.nn.Module):
        pass

    class DeepSpeedEngine(torch.nn.Module):
        pass

    class FSDPBertModel(torch.nn.Module):
        pass

    assert wc.engaged_strategy(DistributedDataParallel()) == "ddp"
    assert wc.engaged_strategy(DeepSpeedEngine()) == "deepspeed"
    assert wc.engaged_strategy(FSDPBertModel()) == "fsdp"


def test_runtime_check_message():
    class Acc:
        num_processes, process_index, mixed_precision = 1, 0, "no"
        distributed_type = "DistributedType.NO"
        device = type("D", (), {"type": "cpu"})()
        state = None

    env = {"KIT_EXPECTED_WORLD_SIZE": "2", "KIT_EXPECTED_STRATEGY": "ddp"}
    with pytest.raises(wc.WorldCheckError, match=r"^world check failed: world size 1 but 2 planned"):
        wc.check(Acc(), env=env)
    wc.check(Acc(), env={})

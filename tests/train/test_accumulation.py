"""Gradient accumulation means the same under every strategy: one count for the loop, accelerate and DeepSpeed."""

import json
from types import SimpleNamespace

import pytest

from tests.train.launch import run_job
from tests.train.support import synthetic_rows, tiny_args, write_csv
from train import accumulation

ENV = accumulation.ENV


def fake_accelerator(ds_value=None):
    plugin = None if ds_value is None else SimpleNamespace(deepspeed_config={"gradient_accumulation_steps": ds_value})
    return SimpleNamespace(state=SimpleNamespace(deepspeed_plugin=plugin), gradient_accumulation_steps=1)


def test_env_sets_it_for_ddp_and_fsdp():
    acc = fake_accelerator()
    assert accumulation.resolve(None, acc, {ENV: "2"}) == 2 and acc.gradient_accumulation_steps == 2
    assert accumulation.resolve(2, fake_accelerator(), {ENV: "2"}) == 2
    assert accumulation.resolve(None, fake_accelerator(), {}) == 1  # by hand, nothing set
    assert accumulation.resolve(3, fake_accelerator(), {}) == 3


def test_deepspeed_json_is_what_counts_and_auto_is_filled():
    acc = fake_accelerator(4)  # a user's own JSON: accelerate switches to its number at prepare()
    assert accumulation.resolve(None, acc, {ENV: "1"}) == 4 and acc.gradient_accumulation_steps == 4
    auto = fake_accelerator("auto")
    assert accumulation.resolve(None, auto, {ENV: "2"}) == 2
    assert auto.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"] == 2


def test_a_disagreeing_flag_is_refused():
    with pytest.raises(accumulation.AccumulationError, match=f"--grad-accum 3 but {ENV}.* is 2"):
        accumulation.resolve(3, fake_accelerator(), {ENV: "2"})
    with pytest.raises(accumulation.AccumulationError, match="DeepSpeed config's gradient_accumulation_steps is 2"):
        accumulation.resolve(1, fake_accelerator(2), {})


# 200 training examples, batches of 8: 25 batches, 12 per rank (2 ranks), so 6 optimizer steps per epoch.
@pytest.mark.slow
@pytest.mark.parametrize("strategy,stage,machines", [("ddp", 2, 1), ("deepspeed", 2, 1), ("deepspeed", 3, 2)])
def test_one_epoch_with_accumulation_2_is_one_epoch(tmp_path, strategy, stage, machines):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(250))
    out = tmp_path / "out"
    args = tiny_args(data, out, tmp_path / "cache", "--epochs", "1", "--log-every", "1", "--no-save-model")
    result = run_job(tmp_path, strategy, args, machines=machines, stage=stage,
                     job_fields={"gradient_accumulation_steps": 2})
    assert result.returncode == 0, result.stdout[-4000:]
    assert "Gradient accumulation steps mismatch" not in result.stdout
    m = json.loads((out / "metrics.json").read_text())
    assert (m["grad_accum"], m["steps"], m["epochs"], m["steps_per_epoch"]) == (2, 6, 1, 6)
    assert m["samples"] == 6 * 2 * 8 * 2  # steps x accumulation x batch x ranks: one pass over 192 examples
    assert m["schedule_steps"] == 6 and [e["step"] for e in m["train_log"]] == [1, 2, 3, 4, 5, 6]
    assert m["train_log"][-1]["lr"] == 0.0  # the schedule ends exactly at the last optimizer step

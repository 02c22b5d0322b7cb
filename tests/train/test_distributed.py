"""Real multi-process runs on CPU (gloo), launched by `kit submit` (tests/train/launch.py)."""

import json
import shutil

import pytest
import torch

from tests.train.support import synthetic_rows, tiny_args, write_csv
from tests.train.launch import run_job, run_misconfigured
from train import EXIT_PREEMPTED, checkpoint, preempt
from train.results import DUMP_ENV

N_EXAMPLES = 250  # 25 validation and 25 test examples: uneven over 2 ranks and over eval batches of 16


def _setup(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(N_EXAMPLES))
    return data, tmp_path / "out", tmp_path / "cache"


def _params(directory):
    return [torch.load(directory / f"rank{r}.pt") for r in (0, 1)]


def _assert_same(a: dict, b: dict, atol=0.0):
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=atol, rtol=0), name


@pytest.mark.slow
@pytest.mark.parametrize("strategy,stage,machines,name", [
    ("ddp", None, 2, "ddp"),
    ("deepspeed", 2, 1, "deepspeed_zero2"),
    ("deepspeed", 3, 2, "deepspeed_zero3"),
])
def test_ranks_agree_and_eval_counts_each_example_once(tmp_path, strategy, stage, machines, name):
    data, out, cache = _setup(tmp_path)
    result = run_job(tmp_path, strategy, tiny_args(data, out, cache, "--max-steps", "6", "--eval-every", "3"),
                     machines=machines, stage=stage or 2, extra_env={DUMP_ENV: str(tmp_path / "params")})
    assert result.returncode == 0, result.stdout[-4000:]
    rank0, rank1 = _params(tmp_path / "params")
    _assert_same(rank0, rank1)
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["world_size"], metrics["strategy"], metrics["steps"]) == (2, name, 6)
    assert [e["examples"] for e in metrics["evals"]] == [25, 25]
    # One line per evaluation, from rank 0 only, for kit's early stopping (the sweep's metrics.jsonl contract).
    curve = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert curve == [{"step": e["step"], "loss": e["loss"], "accuracy": e["accuracy"]} for e in metrics["evals"]]
    assert [c["step"] for c in curve] == [3, 6]
    assert metrics["test"]["examples"] == 25 and sum(map(sum, metrics["test"]["confusion_matrix"])) == 25
    assert (out / "classification_report.txt").is_file() and (out / "curves.png").stat().st_size > 1000
    # The saved model holds the trained (gathered, for ZeRO-3) weights, not a shard or the initial ones.
    from safetensors.torch import load_file

    saved = load_file(out / "model" / "model.safetensors")
    key = "classifier.weight"
    assert torch.allclose(saved[key].float(), rank0[key], atol=1e-6)
    assert (out / "model" / "tokenizer.json").is_file()
    # The heads' weights were fitted on the whole validation split (every example once across ranks) before the
    # test, and saved with the model.
    mix = metrics["ngram_mix"]
    assert mix["examples"] == 25 and mix["deep"] > 0 and mix["wide"] > 0
    assert json.loads((out / "model" / "config.json").read_text())["ngram_mix"] == [mix["deep"], mix["wide"]]


@pytest.mark.slow
def test_resume_after_sigterm_matches_uninterrupted_run(tmp_path):
    data, _, cache = _setup(tmp_path)
    # 200 training examples -> 12 steps per epoch on 2 ranks: preempt mid-way through the second epoch.
    common = ["--max-steps", "20", "--save-every", "4"]
    full = run_job(tmp_path, "ddp", tiny_args(data, tmp_path / "full", cache, *common),
                   extra_env={DUMP_ENV: str(tmp_path / "p_full")})
    assert full.returncode == 0, full.stdout[-4000:]

    out = tmp_path / "resumed"
    first = run_job(tmp_path, "ddp", tiny_args(data, out, cache, *common),
                    extra_env={"KIT_TRAIN_TEST_SIGNAL_AT_STEP": "15"})
    assert first.returncode != 0 and f"exit {EXIT_PREEMPTED}" in first.stdout, first.stdout[-4000:]
    marker = json.loads((out / preempt.MARKER).read_text())
    assert marker["step"] == 15 and marker["checkpoint"].endswith("step-15")
    assert not (out / "metrics.json").exists()
    # A newer checkpoint that was cut short must be skipped by --resume auto.
    bad = checkpoint.checkpoints_dir(out) / "step-18"
    shutil.copytree(checkpoint.checkpoints_dir(out) / "step-15", bad)
    victim = max((p for p in bad.rglob("*") if p.is_file() and p.name != checkpoint.MANIFEST),
                 key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])

    second = run_job(tmp_path, "ddp", tiny_args(data, out, cache, *common, "--resume", "auto"),
                     extra_env={DUMP_ENV: str(tmp_path / "p_resumed")})
    assert second.returncode == 0, second.stdout[-4000:]
    assert "resumed from" in second.stdout and "step-15" in second.stdout
    assert not (out / preempt.MARKER).exists()
    for a, b in zip(_params(tmp_path / "p_full"), _params(tmp_path / "p_resumed")):
        _assert_same(a, b, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["multi_cpu_yaml", "multi_gpu_flag_without_cpu_env"])
def test_world_that_would_train_alone_fails_the_world_check(tmp_path, variant):
    data, out, cache = _setup(tmp_path)
    if variant == "multi_cpu_yaml":  # MULTI_CPU without mpirun: one process per launch, no rendezvous
        kw = dict(distributed_type="MULTI_CPU", flags=())
    else:  # torch.distributed forms, but accelerate reports distributed type NO
        kw = dict(use_cpu_env=False)
    result = run_misconfigured(tmp_path, tiny_args(data, out, cache, "--max-steps", "3"), **kw)
    assert result.returncode != 0
    assert "world check failed: " in result.stdout, result.stdout[-4000:]
    needle = "world size 1 but 2 planned" if variant == "multi_cpu_yaml" else "distributed type NO"
    assert needle in result.stdout
    assert not (out / "metrics.json").exists()

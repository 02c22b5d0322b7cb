"""Mixed precision that proves itself: the check at start (train/precision.py) and bf16 really engaged on CPU."""

import contextlib
import json
import math
import os
import subprocess
import sys

import torch

from tests.launcher.localrun import REPO
from tests.train.launch import run_job
from tests.train.support import synthetic_rows, tiny_args, train_by_hand, write_csv
from train import precision


class _Plain:
    """What the check needs of an Accelerator: unwrap_model (nothing is wrapped here)."""

    def unwrap_model(self, model):
        return model


def _forward(model, dtype=None):
    def forward(batch):
        with torch.autocast("cpu", dtype=dtype) if dtype else contextlib.nullcontext():
            return model(**batch)
    return forward


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Embedding(10, 8), torch.nn.Linear(8, 8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 2))


class _Wrapped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = _model()

    def forward(self, input_ids, attention_mask):
        return self.net(input_ids)


def test_a_forward_under_cpu_autocast_is_seen_in_bfloat16_and_without_it_in_float32():
    batch = {"input_ids": torch.tensor([[1, 2, 3]]), "attention_mask": torch.ones(1, 3, dtype=torch.long)}
    model = _Wrapped()
    seen = precision.linear_dtypes(_Plain(), model, _forward(model, torch.bfloat16), batch)
    assert seen == [torch.bfloat16, torch.bfloat16]
    assert precision.verdict("bf16", "cpu", seen) is None
    plain = precision.linear_dtypes(_Plain(), model, _forward(model), batch)
    assert plain == [torch.float32, torch.float32]
    line = precision.verdict("bf16", "cpu", plain)
    assert line == ("precision check failed: mixed precision bf16 planned but a forward on cpu computes in float32 "
                    "(2 of 2 linear layers)")
    assert precision.verdict("no", "cpu", plain) is None


def test_fp16_on_cpu_is_named_as_such():
    line = precision.verdict("fp16", "cpu", [torch.float32])
    assert "fp16 planned" in line and "CPU autocast supports bf16 only" in line and "\n" not in line


def test_the_reference_job_in_fp16_on_cpu_is_refused_by_kit_in_one_line_before_launch(tmp_path):
    """`kit submit jobs/bert_cls.yaml --mixed-precision fp16` on this machine (no GPU): exit 2 at planning, one line,
    no run record, no node started."""
    result = subprocess.run([sys.executable, "-m", "launcher", "submit", os.path.join(REPO, "jobs", "bert_cls.yaml"),
                             "--mixed-precision", "fp16"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == ("kit: error: mixed_precision: fp16 needs GPUs; use bf16 or no on a CPU cluster, "
                             "or set --gpus\n")
    assert list(tmp_path.iterdir()) == []


def test_fp16_by_hand_on_cpu_stops_at_start_with_one_line(tmp_path):
    """kit refuses fp16 on CPU before launch (tests/spec/test_bad_inputs.py and the reference job's test below); a launch by hand that asks
    accelerate for fp16 trains in float32 without a word, so the module stops it: exit 3, one line."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(80))
    result = train_by_hand(tiny_args(data, tmp_path / "out", tmp_path / "cache", "--max-steps", "2"),
                           ACCELERATE_MIXED_PRECISION="fp16")
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-3000:]
    failures = [line for line in result.stderr.splitlines() if line.startswith(precision.PREFIX)]
    assert failures == ["precision check failed: mixed precision fp16 planned but a forward on cpu computes in "
                        "float32 (14 of 14 linear layers) (PyTorch's CPU autocast supports bf16 only: use bf16 or "
                        "no on CPU)"], result.stderr[-3000:]
    assert "step 1/" not in result.stdout


def test_bf16_on_two_cpu_processes_computes_in_bfloat16_and_trains_otherwise(tmp_path):
    """The same few steps in `no` and in `bf16` on 2 CPU processes (DDP through kit): the check sees float32 and
    bfloat16, and the losses differ (bf16 rounds every activation) while both train."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(160))
    runs = {}
    for mode in ("no", "bf16"):
        out = tmp_path / f"out-{mode}"
        args = tiny_args(data, out, tmp_path / "cache", "--max-steps", "6", "--log-every", "1", "--no-save-model")
        result = run_job(tmp_path, "ddp", args, job_fields={"mixed_precision": mode})
        assert result.returncode == 0, result.stdout[-4000:]
        checks = [line.split("] ", 1)[-1] for line in result.stdout.splitlines() if "precision check:" in line]
        metrics = json.loads((out / "metrics.json").read_text())
        runs[mode] = (checks, [round(r["loss"], 6) for r in metrics["train_log"]], metrics)
    (no_checks, no_losses, no_metrics), (bf_checks, bf_losses, bf_metrics) = runs["no"], runs["bf16"]
    print(f"\nno:   {no_checks[0]}\n      losses {no_losses}\nbf16: {bf_checks[0]}\n      losses {bf_losses}")
    assert no_checks == ["precision check: mixed precision no: a forward computes in float32 (14 linear layers, "
                         "no autocast)"]
    assert bf_checks == ["precision check: mixed precision bf16: a forward computes in bfloat16 (14 linear layers, "
                         "autocast on cpu)"]
    assert (no_metrics["mixed_precision"], bf_metrics["mixed_precision"]) == ("no", "bf16")
    assert len(no_losses) == len(bf_losses) == 6 and all(math.isfinite(x) for x in no_losses + bf_losses)
    assert no_losses != bf_losses
    assert max(abs(a - b) for a, b in zip(no_losses, bf_losses)) < 0.1  # the same training, rounded otherwise

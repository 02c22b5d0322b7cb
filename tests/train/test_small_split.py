"""A training split smaller than one batch (issue 36): refused at start as one line of bad data, exit 4, with or
without bucketing (it crashed in torch.cat, or looped for ever at 0 steps per epoch, deaf to SIGTERM)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from train import EXIT_BAD_DATA
from train.batching import BucketBatchSampler
from tests.train.support import synthetic_rows, tiny_args, train_by_hand, write_csv

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("bucketing", [True, False])
def test_fewer_examples_than_a_batch_give_no_batches(bucketing):
    sampler = BucketBatchSampler(torch.tensor([3, 9, 4]), 8, seed=0, bucketing=bucketing)
    assert len(sampler) == 0 and sampler.batches(0) == []


@pytest.mark.parametrize("flags", [(), ("--no-bucketing",)], ids=["bucketing", "no-bucketing"])
def test_a_training_split_smaller_than_a_batch_is_one_line_of_bad_data(tmp_path, flags):
    data = write_csv(tmp_path / "few.csv", synthetic_rows(8))   # 1 test, 1 validation, 6 training examples
    r = train_by_hand(tiny_args(data, tmp_path / "out", tmp_path / "cache", *flags), timeout=240)
    assert r.returncode == EXIT_BAD_DATA, r.stderr[-3000:]
    said = [line for line in r.stderr.splitlines() if line.strip()]
    assert said == ["bad data: training split: 6 examples, fewer than one batch of 8 (8 examples); lower "
                    "--batch-size or give more data"], r.stderr[-3000:]
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())   # refused before building


def test_the_loop_refuses_a_loader_without_a_batch_instead_of_spinning(tmp_path):
    """The loop's own guard, past the check at start: a run whose loader has no batch ends with an error."""
    script = textwrap.dedent("""
        import argparse, torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader
        from train.batching import BucketBatchSampler
        from train.trainer import Trainer
        acc = Accelerator(cpu=True)
        net = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        sampler = BucketBatchSampler(torch.tensor([3, 4, 5]), 8, 0, bucketing=False)
        net, opt, dl, sched = acc.prepare(net, opt, DataLoader(list(range(3)), batch_sampler=sampler), sched)
        args = argparse.Namespace(grad_accum=1, max_steps=0, epochs=1.0, log_every=5, batch_size=8,
                                  max_grad_norm=1.0, eval_every=0, save_every=0, output_dir=".", keep_checkpoints=1)
        Trainer(args, acc, net, opt, sched, {"train": dl}, sampler, ["a", "b"]).train()
    """)
    r = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert r.returncode == 1 and "RuntimeError: train: the training loader has no batch" in r.stderr, r.stderr


def test_the_check_counts_every_process_or_replica():
    from train import data

    splits = data.split([data.Example(f"t{i}", "ab"[i % 2], f"f:{i}") for i in range(20)], 0, 0.1, 0.1)
    data.require_one_batch(splits, 8, 2)   # 16 training examples: one batch for each of 2 processes
    with pytest.raises(data.DataError, match=r"^training split: 16 examples, fewer than one batch of 8 on each of "
                                             r"3 pipeline replicas \(24 examples\); lower --batch-size"):
        data.require_one_batch(splits, 8, 3, "pipeline replicas")

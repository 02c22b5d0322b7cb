"""Nodes without a shared file system: each builds the same tokenizer in its own cache, keeps its own copy of every
checkpoint, and DDP resumes from them."""

import json

import pytest

from tests.train.launch import run_private_nodes
from tests.train.support import synthetic_rows, write_csv
from train import checkpoint


@pytest.mark.slow
def test_ddp_resumes_when_each_node_has_only_its_own_files(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(160))
    # Relative paths: node 0 writes under host0/, node 1 under host1/; neither sees the other's files.
    args = ["--data", str(data), "--output-dir", "out", "--cache-dir", "cache", "--model", "tiny", "--vocab-size",
            "200", "--max-length", "32", "--batch-size", "8", "--eval-batch-size", "16", "--max-steps", "6",
            "--save-every", "3", "--log-every", "3", "--no-save-model", "--pretrain-epochs", "0"]
    first = run_private_nodes(tmp_path, args, {"KIT_TRAIN_TEST_SIGNAL_AT_STEP": "3"})
    assert "preempted at step 3" in first[0].stdout, first[0].stdout[-4000:] + first[1].stdout[-4000:]
    # Each node built its own tokenizer: the same bytes (the data check would have stopped the run otherwise).
    built = [{p.name: p.read_bytes() for p in next((tmp_path / h / "cache").glob("tokenizer-*")).iterdir()}
             for h in ("host0", "host1")]
    assert built[0] == built[1] and "tokenizer.json" in built[0]
    copy = checkpoint.checkpoints_dir(tmp_path / "host1" / "out") / "step-3"
    assert checkpoint.is_complete(copy)
    assert {"model.safetensors", "optimizer.bin", "scheduler.bin"} <= {p.name for p in copy.iterdir()}
    second = run_private_nodes(tmp_path, args)
    assert [r.returncode for r in second] == [0, 0], second[0].stdout[-4000:] + second[1].stdout[-4000:]
    assert "resumed from out/checkpoints/step-3 at step 3" in second[0].stdout
    assert json.loads((tmp_path / "host0" / "out" / "metrics.json").read_text())["steps"] == 6

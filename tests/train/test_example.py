"""train/example.py: the readable example runs under kit as users run it, stays short, imports nothing of kit, and
refuses a world it was not planned for."""

import ast
import json
import os
import subprocess
import sys

import pytest

from tests.train.launch import REPO

EXAMPLE = REPO / "train" / "example.py"


def test_the_example_is_short_and_imports_public_libraries_only():
    source = EXAMPLE.read_text()
    assert len(source.splitlines()) <= 300
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert not imported & {"train", "launcher", "kit", "tests"}, imported
    assert {"accelerate", "torch", "transformers", "sklearn"} <= imported


@pytest.mark.slow
def test_the_example_trains_a_two_process_bf16_world_under_kit(tmp_path):
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "launcher", "submit", "train/example.py", "--procs-per-node", "2",
            "--mixed-precision", "bf16", "--set", f"cluster.run_root={tmp_path / 'runs'}", "--run-id", "example",
            "--", "--max-steps", "12", "--batch-size", "16", "--output-dir", str(out)]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "world 2 process(es)" in proc.stdout and "mixed precision bf16" in proc.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["world_size"] == 2 and metrics["steps"] == 12
    assert 0.0 <= metrics["test"]["accuracy"] <= 1.0 and len(metrics["peak_rss_mib"]) == 2
    assert [e["step"] for e in metrics["evals"]] == [12]
    curve = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]   # rank 0's only
    assert curve == [{"step": 12, "loss": metrics["evals"][0]["loss"], "accuracy": metrics["evals"][0]["accuracy"]}]
    report = (out / "classification_report.txt").read_text()
    assert "neg" in report and "pos" in report and "accuracy" in report
    # Its two marker lines give `kit report` the training time: a goodput figure, nothing left unreported.
    report = subprocess.run([sys.executable, "-m", "launcher", "report", "example", "--json"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    timeline = json.loads(report.stdout)
    assert timeline["goodput_s"] and timeline["goodput_s"] > 0 and not timeline["unreported_s"]


@pytest.mark.slow
def test_the_example_fails_loudly_in_a_world_other_than_the_planned_one(tmp_path):
    # One plain process told that kit planned two: what a CPU launch that trains every process alone looks like.
    env = {**os.environ, "KIT_EXPECTED_WORLD_SIZE": "2", "KIT_EXPECTED_STRATEGY": "ddp"}
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--max-steps", "1", "--output-dir", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "world check failed: 1 process(es) joined, kit planned 2" in proc.stderr
    assert not (tmp_path / "metrics.json").exists()

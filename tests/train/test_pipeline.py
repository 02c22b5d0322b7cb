"""Pipeline parallelism of the reference module (job `pipeline_stages`), through kit on this machine: the stages
form and say which layers they hold, the loss falls as without pipelining, the test report is written, a run
whose rank is SIGKILLed resumes from its checkpoint, and 2 stages x 2 replicas train across 2 nodes."""

import json
import os
import re
import signal

import pytest
import yaml

from train.pipeline import LayoutError, layer_split, layout
from tests.launcher.localrun import LOCAL_CLUSTER, kit, kit_background, pids_of_run, wait_for
from tests.train.launch import link_reference_module
from tests.train.support import resumable_args, synthetic_rows, tiny_args, write_csv


def test_layout_and_layer_split():
    assert [(layout(4, 2, r).stage, layout(4, 2, r).replica) for r in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert layout(4, 2, 3).pipeline_ranks(1) == [2, 3] and layout(4, 2, 0).stage_ranks(1) == [1, 3]
    assert layer_split(12, 4) == [(0, 3), (3, 6), (6, 9), (9, 12)]
    assert layer_split(5, 2) == [(0, 2), (2, 5)]   # the embeddings' stage takes fewer layers
    with pytest.raises(LayoutError):
        layout(6, 4, 0)
    with pytest.raises(LayoutError):
        layer_split(2, 3)


def _job(tmp_path, name, args, nodes=1, procs=2, **fields):
    link_reference_module(tmp_path)   # kit runs from tmp_path, the nodes' workdir: it holds the reference module
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "entrypoint": {"module": "train"}, "args": args, "nodes": nodes,
                                    "procs_per_node": procs, **fields}))
    return str(path)


def _losses(text: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(r"step \d+/\d+ epoch \d+ loss ([\d.]+)", text)]


@pytest.mark.slow
def test_two_stages_train_like_one_process_and_write_the_report(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    common = ("--max-steps", "150", "--log-every", "25", "--no-save-model")
    piped = kit("submit", _job(tmp_path, "piped", tiny_args(data, tmp_path / "out-p", tmp_path / "cache", *common),
                               pipeline_stages=2), "--cluster", LOCAL_CLUSTER, "--run-id", "piped",
                cwd=tmp_path, timeout=300)
    assert piped.returncode == 0, piped.stderr[-3000:] + piped.stdout[-3000:]
    plain = kit("submit", _job(tmp_path, "plain", tiny_args(data, tmp_path / "out-s", tmp_path / "cache", *common),
                               procs=1), "--cluster", LOCAL_CLUSTER, "--run-id", "plain", cwd=tmp_path, timeout=300)
    assert plain.returncode == 0, plain.stderr[-3000:]
    out = piped.stdout
    assert "[node0/rank0] pipeline: rank 0 is stage 0/2 of replica 0/1: embeddings, layers 0-0" in out
    assert "[node0/rank1] pipeline: rank 1 is stage 1/2 of replica 0/1: layers 1-1, classifier" in out
    assert "world check: 2 processes = 2 pipeline stage(s) x 1 replica(s)" in out
    p, s = _losses(out), _losses(plain.stdout)
    assert len(p) == len(s) == 6 and p[-1] < p[0] / 4, p
    metrics = json.loads((tmp_path / "out-p" / "metrics.json").read_text())
    baseline = json.loads((tmp_path / "out-s" / "metrics.json").read_text())
    assert metrics["pipeline"] == {"stages": 2, "replicas": 1, "microbatches": 2} and metrics["steps"] == 150
    assert abs(metrics["evals"][-1]["loss"] - baseline["evals"][-1]["loss"]) < 0.1, (metrics["evals"],
                                                                                    baseline["evals"])
    assert metrics["test"]["examples"] == baseline["test"]["examples"]
    assert "confusion matrix" in (tmp_path / "out-p" / "classification_report.txt").read_text()
    assert (tmp_path / "out-p" / "FINISHED").is_file()


@pytest.mark.slow
def test_a_sigkilled_pipeline_resumes_from_its_checkpoint(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    args = resumable_args(data, tmp_path / "out", tmp_path / "cache", "--max-steps", "400", "--save-every", "20",
                          "--log-every", "20", "--no-save-model")
    job = _job(tmp_path, "resumable", args, pipeline_stages=2)
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "pk1", cwd=tmp_path)
    ckpts = tmp_path / "out" / "checkpoints"
    try:
        assert wait_for(lambda: ckpts.is_dir() and any(n.startswith("step-") for n in os.listdir(ckpts)),
                        timeout=240), "no checkpoint"
        for pid in pids_of_run("pk1"):
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"RANK=1" in f.read().split(b"\0") and b"train" in open(f"/proc/{pid}/cmdline", "rb").read():
                    os.kill(pid, signal.SIGKILL)
        first, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, first[-2000:]
    again = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "pk2", cwd=tmp_path, timeout=400)
    assert again.returncode == 0, again.stderr[-3000:] + again.stdout[-2000:]
    resumed = re.search(r"resumed from \S+/step-(\d+) at step (\d+)", again.stdout)
    assert resumed and int(resumed[2]) >= 20, again.stdout[-2000:]
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["steps"] == 400
    assert f"step {int(resumed[2]) - 20}/400" not in again.stdout   # earlier steps were not trained again


@pytest.mark.slow
def test_two_stages_by_two_replicas_across_two_nodes(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    args = tiny_args(data, tmp_path / "out", tmp_path / "cache", "--max-steps", "40", "--log-every", "20",
                     "--no-save-model")
    r = kit("submit", _job(tmp_path, "pp4", args, nodes=2, procs=2, pipeline_stages=2), "--cluster",
            LOCAL_CLUSTER, "--run-id", "pp4", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-2000:]
    assert "world check: 4 processes = 2 pipeline stage(s) x 2 replica(s)" in r.stdout
    assert "[node1/rank3] pipeline: rank 3 is stage 1/2 of replica 1/2: layers 1-1, classifier" in r.stdout
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["pipeline"]["replicas"] == 2 and metrics["world_size"] == 4 and metrics["steps"] == 40


@pytest.mark.slow
def test_a_preempted_pipeline_checkpoints_at_one_step_and_resumes_from_it(tmp_path):
    """SIGTERM reaches one rank (the test hook: rank 0 signals itself at step 15): every stage stops at that step,
    after a checkpoint, with the PREEMPTED marker and exit 75; the next run continues from step 15."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    args = resumable_args(data, tmp_path / "out", tmp_path / "cache", "--max-steps", "30", "--log-every", "5",
                          "--no-save-model")
    job = _job(tmp_path, "preempted", args, pipeline_stages=2)
    env = {**os.environ, "KIT_TRAIN_TEST_SIGNAL_AT_STEP": "15"}
    first = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "pt1", cwd=tmp_path, timeout=300, env=env)
    assert first.returncode != 0, first.stdout[-3000:]
    assert "preempted at step 15: checkpoint" in first.stdout and "exit 75" in first.stdout, first.stdout[-3000:]
    marker = json.loads((tmp_path / "out" / "PREEMPTED").read_text())
    assert marker["step"] == 15 and marker["checkpoint"].endswith("step-15") and marker["signal"] == "SIGTERM"
    assert sorted(os.listdir(tmp_path / "out" / "checkpoints" / "step-15")) == ["kit_manifest.json", "stage0.pt",
                                                                              "stage1.pt"]
    again = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "pt2", cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:] + again.stdout[-2000:]
    assert re.search(r"resumed from \S+/step-15 at step 15", again.stdout), again.stdout[-2000:]
    assert "step 10/30" not in again.stdout and "step 20/30" in again.stdout
    assert not (tmp_path / "out" / "PREEMPTED").exists()
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["steps"] == 30

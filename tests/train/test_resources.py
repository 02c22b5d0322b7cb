"""Resources in the report (train/resources.py): per rank and per logging interval, peak memory, utilisation and
samples/s; on CPU the process's RSS and CPU time."""

import json
import struct
import time

import numpy as np
import torch

from tests.train.launch import run_job
from tests.train.support import synthetic_rows, tiny_args, write_csv
from train import outputs, resources


def test_cpu_probe_sees_a_new_peak_each_interval_and_the_cpu_it_burns():
    probe = resources.Probe(torch.device("cpu"))
    base, _ = probe.read()
    block = np.ones(300 * 2**20 // 8)  # 300 MiB, touched
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:  # burn 0.3 s of CPU
        pass
    peak, cpu = probe.read()
    assert peak >= base + 290 and cpu > 5, (base, peak, cpu)
    del block
    probe.start()
    after, _ = probe.read()
    if probe.per_interval_memory:  # the kernel let us reset the high-water mark
        assert after < peak - 250, (after, peak)
    else:
        assert after >= peak
    assert probe.memory_kind.startswith("resident memory, RSS")


def test_summary_and_last_lines():
    log = [{"step": 2, "ranks": [{"rank": 0, "peak_memory_mib": 400.0, "utilization_pct": 90.0, "samples_per_s": 10.0,
                                  "samples": 20, "train_s": 2.0},
                                 {"rank": 1, "peak_memory_mib": 410.0, "utilization_pct": None, "samples_per_s": 5.0,
                                  "samples": 20, "train_s": 4.0}]},
           {"step": 4, "ranks": [{"rank": 0, "peak_memory_mib": 420.0, "utilization_pct": 70.0, "samples_per_s": 20.0,
                                  "samples": 20, "train_s": 1.0},
                                 {"rank": 1, "peak_memory_mib": 405.0, "utilization_pct": 50.0, "samples_per_s": 10.0,
                                  "samples": 20, "train_s": 2.0}]}]
    rows = resources.summary(log)
    assert rows == [{"rank": 0, "peak_memory_mib": 420.0, "utilization_pct": 80.0, "samples_per_s": 13.33},
                    {"rank": 1, "peak_memory_mib": 410.0, "utilization_pct": 50.0, "samples_per_s": 6.67}]
    assert resources.lines({"device": "cpu"}, rows) == [
        "rank 0: peak RSS 420 MiB, CPU (process) 80%, 13.33 samples/s",
        "rank 1: peak RSS 410 MiB, CPU (process) 50%, 6.67 samples/s"]
    assert resources.lines({"device": "cuda"}, rows[:1])[0].startswith("rank 0: peak CUDA memory 420 MiB, GPU (NVML)")


def test_curves_draw_every_rank_beside_loss_and_accuracy():
    ranks = [{"rank": r, "peak_memory_mib": 400.0 + r, "utilization_pct": 90.0, "samples_per_s": 10.0} for r in (0, 1)]
    log = [{"step": s, "loss": 0.7 - s / 100, "lr": 1e-3, "ranks": ranks} for s in (2, 4)]
    figure = outputs.curves_figure(log, [{"step": 4, "loss": 0.6, "accuracy": 0.7}], {"device": "cpu"})
    panels = {ax.get_title(): [line.get_label() for line in ax.get_lines()] for ax in figure.axes}
    assert panels["fine-tuning: loss"] == ["train loss", "validation loss"]
    assert panels["fine-tuning: validation accuracy"] == ["validation accuracy"]
    for title in ("peak memory per rank (RSS)", "CPU per rank (process; 100% = one core)", "samples/s per rank"):
        assert panels[title] == ["rank 0", "rank 1"], (title, panels)


def _png_size(path):
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height


def test_a_cpu_run_reports_memory_and_cpu_per_rank(tmp_path):
    """Two processes through kit, a short pretraining then fine-tuning: every logging interval of both phases has
    both ranks' RSS, CPU % and samples/s in metrics.json; curves.png has the resource panels; the last lines sum
    each rank up."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(160))
    out = tmp_path / "out"
    args = tiny_args(data, out, tmp_path / "cache", "--pretrain-steps", "4", "--max-steps", "6", "--log-every", "2",
                     "--no-save-model")
    result = run_job(tmp_path, "ddp", args)
    assert result.returncode == 0, result.stdout[-4000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert [e["step"] for e in metrics["train_log"]] == [2, 4, 6]
    assert [e["step"] for e in metrics["pretrain"]["train_log"]] == [2, 4]
    for entry in metrics["pretrain"]["train_log"] + metrics["train_log"]:
        assert [r["rank"] for r in entry["ranks"]] == [0, 1]
        for row in entry["ranks"]:
            assert row["peak_memory_mib"] > 50 and row["utilization_pct"] > 0 and row["samples_per_s"] > 0, row
            assert row["samples"] == 2 * 8  # two steps of 8 examples on this rank
    info = metrics["resources"]
    assert info["device"] == "cpu" and info["memory"].startswith("resident memory, RSS")
    assert info["utilization"] == "process CPU time over wall time (100% = one core)"
    assert [r["rank"] for r in info["per_rank"]] == [0, 1] and metrics["gpu"] is None
    print("\n" + json.dumps({"train_log[0].ranks": metrics["train_log"][0]["ranks"], "resources": info}, indent=1))
    assert _png_size(out / "curves.png") == (1500, 800)
    last = [line.split("] ", 1)[-1] for line in result.stdout.splitlines() if "peak RSS" in line]
    assert [line.split(":")[0] for line in last] == ["rank 0", "rank 1"], result.stdout[-3000:]
    assert all(line.endswith("samples/s (pretraining and fine-tuning)") for line in last), last

"""Issue 31 on the harness's SLURM cluster: kit report of a 2-node training job (its wait in the queue from the
record's timeline, goodput from the training module's lines in the node logs, every second counted once), and
slurm.exclude_failed_nodes keeping a job off a node that failed in one of its last runs (`--exclude`)."""

import json
import os

import pytest

from launcher import run_index
from launcher.records import write_atomic
from launcher.status import Failure, NodeStatus, RunStatus
from tests.backends.slurmrun import cluster_file, kit, status_of, workdir, write_job
from tests.train.support import synthetic_rows, tiny_args, write_csv


def test_report_of_a_training_job_counts_its_queue_and_its_training(slurm_cluster, tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(200))
    args = tiny_args(data, tmp_path / "out", tmp_path / "cache", "--max-steps", "20", "--save-every", "10",
                     "--no-save-model")
    job = write_job(tmp_path, name="rep", nodes=2, args=args, entrypoint={"module": "train"})
    r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path, cpu_threads_per_process=1), "--gpus",
            "0", "--run-id", "slurm-report", cwd=workdir(slurm_cluster), timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    timeline = status_of(slurm_cluster, "slurm-report")["timeline"]
    assert [m["event"] for m in timeline if m["event"] == "running"] == ["running"], timeline
    rep = kit("report", "slurm-report", "--json", cwd=workdir(slurm_cluster))
    assert rep.returncode == 0, rep.stderr
    got = json.loads(rep.stdout)
    assert got["badput"]["queue"] > 0 and got["goodput_s"] > 0 and got["time_to_first_step_s"] > 0
    assert sum(got["badput"].values()) + got["goodput_s"] == pytest.approx(got["total_s"], abs=0.05)
    assert [e["event"] for e in got["timeline"]][:2] == ["submitted", "attempt started"]
    assert {"running", "first step", "checkpoint saved", "end"} <= {e["event"] for e in got["timeline"]}


def test_a_node_that_failed_lately_is_excluded_when_asked(slurm_cluster, tmp_path):
    # n1 caused a failure in its last run (a record of this user's, as a lost node leaves it).
    lost = RunStatus(run_id="earlier", job="j", backend="slurm", state="failed", created_at=1.0, finished_at=2.0,
                     failure=Failure(0, "n1", None, 255, "lost", "no answer"),
                     nodes=(NodeStatus(rank=0, host="n1"),))
    path = str(tmp_path / "runs" / "earlier")
    write_atomic(os.path.join(path, "status.json"), json.dumps(lost.to_json()))
    run_index.remember(path)
    job = write_job(tmp_path, nodes=1, args=["--out", str(tmp_path)])
    cfg = cluster_file(slurm_cluster, tmp_path, slurm={"partition": slurm_cluster.partition,
                                                        "exclude_failed_nodes": True})
    r = kit("submit", job, "--cluster", cfg, "--gpus", "0", "--run-id", "slurm-exclude", cwd=workdir(slurm_cluster),
            timeout=120)
    assert r.returncode == 0, r.stderr
    assert "kit: excluded from the allocation (slurm.exclude_failed_nodes): n1 failed in run earlier (lost, " in r.stderr
    assert [n["host"] for n in status_of(slurm_cluster, "slurm-exclude")["nodes"]] == ["n2"]
    script = open(os.path.join(workdir(slurm_cluster), "runs", "slurm-exclude", "job.sbatch")).read()
    assert "#SBATCH --exclude=n1" in script.splitlines()

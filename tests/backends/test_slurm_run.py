"""kit submit on the real 2-node SLURM cluster: one world across both hosts, followed to the end."""

import glob
import json
import os

from launcher.backends.slurm.queue import sacct_state
from tests.backends.slurmrun import cluster_file, kit, status_of, wait_for, workdir, write_job
from tests.launcher.localrun import reports


def test_two_node_probe_run_ranks_on_two_hosts(slurm_cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=2, procs=1, args=["--out", str(out)])
    cluster = cluster_file(slurm_cluster, tmp_path)
    dry = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "slurm-probe", "--dry-run",
              "--format", "json", cwd=workdir(slurm_cluster))
    planned = json.loads(dry.stdout)["files"]["runs/slurm-probe/job.sbatch"]
    r = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "slurm-probe", cwd=workdir(slurm_cluster),
            timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    got = reports(out)
    assert sorted(g["rank"] for g in got) == [0, 1]
    assert sorted(g["machine_rank"] for g in got) == [0, 1]
    assert all(g["dist_world"] == 2 and g["allreduce_sum"] == 3.0 for g in got)
    assert "SLURM job" in r.stderr and "running on n[1-2]" in r.stderr
    st = status_of(slurm_cluster, "slurm-probe")
    assert st["state"] == "succeeded" and st["exit_code"] == 0 and st["node_exit_codes"] == [0, 0]
    assert [n["host"] for n in st["nodes"]] == ["n1", "n2"]
    # Rank tags as on every backend, the node number resolved inside each task: rank 0 on n1, rank 1 on n2,
    # live while following and in `kit logs` (not tagged twice), and each rank teed into its node's directory.
    run_dir = os.path.join(workdir(slurm_cluster), "runs", "slurm-probe")
    logs = kit("logs", "slurm-probe", cwd=workdir(slurm_cluster))
    for node, line in ((0, "[node0/rank0] probe rank 0/2 ready"), (1, "[node1/rank1] probe rank 1/2 ready")):
        assert line in r.stdout.splitlines() and line in logs.stdout.splitlines(), r.stdout
        assert line in open(os.path.join(run_dir, f"node{node}.log")).read().splitlines()
        teed = glob.glob(os.path.join(run_dir, f"node{node}.ranks", "*", "attempt_0", "0", "stdout.log"))
        assert [open(t).read() for t in teed] == [f"probe rank {node}/2 ready\n"], teed
    assert "[node0/rank1]" not in r.stdout and "[node1/rank0]" not in r.stdout
    # The script SLURM ran is the plan's, byte for byte (the dry-run, made before the run, printed the same plan).
    assert open(os.path.join(run_dir, "job.sbatch")).read() == planned
    # Once the controller forgets the job (MinJobAge), sacct is what kit asks.
    assert wait_for(lambda: sacct_state(st["handle"]["job_id"]) == "COMPLETED", timeout=30)


def test_failing_rank_is_summarized_from_its_own_tagged_output(slurm_cluster, tmp_path):
    """The same one-line summary as the other backends: node, host, rank, the rank's own code and its last words
    (from its teed stderr, which the node log interleaves with its stdout)."""
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=2, procs=1, args=["--out", str(out), "--fail-rank", "1", "--fail-code", "4",
                                                      "--fail-message", "bad data: row 7"])
    r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id",
            "slurm-fail", cwd=workdir(slurm_cluster), timeout=240)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "kit: run slurm-fail failed: node 1 (n2) rank 1 exited 4: bad data: row 7" in r.stderr
    assert "[node1/rank1] bad data: row 7" in r.stdout.splitlines()
    # torchrun's failure table and traceback stay in the node log, off the console, as on the local backend.
    node_log = open(os.path.join(workdir(slurm_cluster), "runs", "slurm-fail", "node1.log")).read()
    assert "Root Cause (first observed failure)" in node_log and "ChildFailedError" in node_log
    assert "Root Cause" not in r.stdout and "ChildFailedError" not in r.stdout, r.stdout

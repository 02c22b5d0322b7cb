"""kit submit on the real 2-node SLURM cluster: one world across both hosts, followed to the end."""

import json
import os

from launcher.backends.slurm_query import sacct_state
from tests.backends.slurmrun import cluster_file, kit, status_of, wait_for, workdir, write_job
from tests.launcher.localrun import reports


def test_two_node_probe_run_ranks_on_two_hosts(slurm_cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=2, procs=1, args=["--out", str(out)])
    cluster = cluster_file(slurm_cluster, tmp_path)
    r = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "slurm-probe", cwd=workdir(slurm_cluster),
            timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    got = reports(out)
    assert sorted(g["rank"] for g in got) == [0, 1]
    assert sorted(g["machine_rank"] for g in got) == [0, 1]
    assert all(g["dist_world"] == 2 and g["allreduce_sum"] == 3.0 for g in got)
    assert "[node0] probe rank 0/2 ready" in r.stdout and "[node1] probe rank 1/2 ready" in r.stdout
    assert "SLURM job" in r.stderr and "running on n[1-2]" in r.stderr
    st = status_of(slurm_cluster, "slurm-probe")
    assert st["state"] == "succeeded" and st["exit_code"] == 0 and st["node_exit_codes"] == [0, 0]
    assert sorted(n["host"] for n in st["nodes"]) == ["n1", "n2"]
    # The script SLURM ran is the plan's, byte for byte (the dry-run prints the same plan).
    run_dir = os.path.join(workdir(slurm_cluster), "runs", "slurm-probe")
    dry = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "slurm-probe", "--dry-run",
              "--format", "json", cwd=workdir(slurm_cluster))
    planned = json.loads(dry.stdout)["files"]["runs/slurm-probe/job.sbatch"]
    assert open(os.path.join(run_dir, "job.sbatch")).read() == planned
    # Once the controller forgets the job (MinJobAge), submitit's sacct watcher is what kit asks.
    assert wait_for(lambda: sacct_state(run_dir, st["job_id"]) == "COMPLETED", timeout=30)

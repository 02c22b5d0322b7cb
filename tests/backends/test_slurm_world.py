"""A node that resolves the master's name wrongly (its /etc/hosts maps n1 to an address nobody has), on the SLURM
cluster (issue 20): kit cancels the job once the world has not formed within timeouts.rendezvous and says, from a
check run on that node inside the allocation, which node could not reach the master and why."""

import time

from tests.backends.slurmrun import cluster_file, kit, probe_processes, workdir, write_job


def test_a_slurm_node_that_cannot_reach_the_master_is_named(slurm_cluster, tmp_path):
    n1, n2 = slurm_cluster.bed.hosts[:2]
    wrong = tmp_path / "hosts"
    wrong.write_text(f"127.0.0.1 localhost\n{slurm_cluster.bed.unused_address} n1\n{n2.address} n2\n")
    job = write_job(tmp_path, nodes=2, args=["--out", str(tmp_path)], timeouts={"rendezvous": 20})
    n2.run(["mount", "--bind", str(wrong), "/etc/hosts"])
    try:
        started = time.monotonic()
        r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
                "--run-id", "slurm-wrong-host", cwd=workdir(slurm_cluster), timeout=300)
        took = time.monotonic() - started
    finally:
        n2.run(["umount", "/etc/hosts"], check=False)
    assert r.returncode == 124, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run slurm-wrong-host failed: node 1 (n2) never joined: it cannot reach the master "
                           f"n1 = {slurm_cluster.bed.unused_address} there:"), line
    assert took < 20 + 90, took
    assert probe_processes(slurm_cluster, "slurm-wrong-host") == {}


def test_a_hung_rank_on_slurm_is_named_with_its_stack(slurm_cluster, tmp_path):
    import os
    job = write_job(tmp_path, nodes=2, args=["--out", str(tmp_path), "--hang-rank", "1"], timeouts={"hang": 10})
    r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id",
            "slurm-hung", cwd=workdir(slurm_cluster), timeout=300)
    assert r.returncode == 124, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run slurm-hung failed: the run hung: no rank made progress for 10 s: rank 0 in "), line
    assert "rank 1 in <module> (rank_probe.py:" in line, line
    stacks = os.path.join(workdir(slurm_cluster), "runs", "slurm-hung", "stacks")
    assert sorted(os.listdir(stacks)) == ["rank0.txt", "rank1.txt"]
    assert probe_processes(slurm_cluster, "slurm-hung") == {}

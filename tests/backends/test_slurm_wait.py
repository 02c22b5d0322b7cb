"""`kit wait` of a detached SLURM job: kit asks SLURM (nobody follows the job) until it ends, and exits with the
failing rank's own code; `kit status` exits with it too."""

from tests.backends.slurmrun import cluster_file, kit, workdir, write_job


def test_wait_of_a_detached_slurm_job_exits_with_the_ranks_code(slurm_cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, name="slurm-waited", nodes=2, args=["--out", str(out), "--fail-rank", "1",
                                                                  "--fail-code", "7"])
    here = workdir(slurm_cluster)
    r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id",
            "slurm-waited", "--detach", cwd=here)
    assert r.returncode == 0, r.stderr
    waited = kit("wait", "slurm-waited", "--timeout", "240", cwd=here, timeout=300)
    assert waited.returncode == 7, waited.stderr
    assert "kit: run slurm-waited failed: node 1 (n2) rank 1 exited 7" in waited.stderr, waited.stderr
    assert kit("status", "slurm-waited", cwd=here).returncode == 7

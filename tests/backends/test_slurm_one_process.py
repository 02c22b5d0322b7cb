"""One-process runs on SLURM (issue 28): a run longer than timeouts.rendezvous is not killed as "never joined",
and the rank's own exit code is the run's."""

import time

from tests.backends.slurmrun import cluster_file, kit, status_of, workdir
from tests.launcher.test_one_process_runs import JOB


def test_a_run_longer_than_the_rendezvous_timeout_succeeds(slurm_cluster, tmp_path):
    started = time.monotonic()
    r = kit("submit", JOB, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
            "--run-id", "slurm-outlives", "--set", "timeouts.rendezvous=5", "--", "--sleep", "14",
            cwd=workdir(slurm_cluster), timeout=180)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert time.monotonic() - started >= 14
    assert "one process done after 14 s, exit 0" in r.stdout, r.stdout
    assert status_of(slurm_cluster, "slurm-outlives")["state"] == "succeeded"


def test_its_own_exit_code_is_the_runs(slurm_cluster, tmp_path):
    r = kit("submit", JOB, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
            "--run-id", "slurm-exits-7", "--", "--exit", "7", cwd=workdir(slurm_cluster), timeout=180)
    assert r.returncode == 7, r.stdout[-2000:] + r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line == "kit: run slurm-exits-7 failed: node 0 (n1) exited 7: one process done after 0 s, exit 7", line

"""Before anything is queued: a job the partition can never run is refused with one line, exit 2, empty queue."""

import pytest

from tests.backends.slurmrun import cluster_file, kit, queue, workdir, write_job

CASES = {
    "bad partition": ({"slurm": {"partition": "nope"}}, {}, (),
                      "slurm.partition nope: no such partition on this cluster (partitions: debug)"),
    "too many nodes": ({}, {"nodes": 3}, (), "--nodes 3: partition debug has 2 node(s) (n[1-2]); ask for at most 2"),
    # The cluster file claims GPU nodes; the partition has none.
    "gpus on cpu nodes": ({"gpus_per_node": 8}, {}, ("--gpus", "8"),
                          "--gpus 8: partition debug has 0 node(s) with 8 or more GPUs, 2 needed "
                          "(GPUs per node: n1: 0, n2: 0); lower --gpus, or --gpus 0 for a CPU job"),
    "missing entrypoint": ({}, {"entrypoint": {"script": "no/such_script.py"}}, (),
                           "entrypoint.script no/such_script.py: no such file in the node's workdir"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_before_submission(slurm_cluster, tmp_path, case):
    cluster_fields, job_fields, argv, message = CASES[case]
    job = write_job(tmp_path, nodes=job_fields.pop("nodes", 2), args=["--out", str(tmp_path)], **job_fields)
    cluster = cluster_file(slurm_cluster, tmp_path, **cluster_fields)
    r = kit("submit", job, "--cluster", cluster, *argv, "--run-id", f"pre-{case.replace(' ', '-')}",
            cwd=workdir(slurm_cluster), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert queue(slurm_cluster) == []


def test_doctor_prints_the_same_checks_as_a_table(slurm_cluster, tmp_path):
    job = write_job(tmp_path, nodes=2, args=["--out", str(tmp_path)])
    good = kit("doctor", "--cluster", cluster_file(slurm_cluster, tmp_path), "--job", job,
               cwd=workdir(slurm_cluster), timeout=60)
    assert good.returncode == 0, good.stdout + good.stderr
    for check in ("slurm tools", "partition", "nodes and GPUs", "workdir", "entrypoint"):
        assert any(line.startswith("slurm") and check in line and "PASS" in line
                   for line in good.stdout.splitlines()), (check, good.stdout)
    bad = kit("doctor", "--cluster", cluster_file(slurm_cluster, tmp_path, slurm={"partition": "nope"}),
              cwd=workdir(slurm_cluster), timeout=60)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAIL" in bad.stdout and "no such partition on this cluster (partitions: debug)" in bad.stdout
    assert "SKIP" in bad.stdout and "some checks FAILED" in bad.stdout

"""Before anything is queued: a job the partition can never run is refused with one line, exit 2, empty queue."""

import sys

import pytest

from tests.backends.slurmrun import cluster_file, kit, queue, workdir, write_job
from tests.harness.configs import slurm_cluster_config

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


def _failed_with(slurm_cluster, run_id, r, cause, code):
    """The job failed at its tasks' start with `cause` as the run's one-line cause: kit's last line, the record's
    failure line and exit code, and `kit status`."""
    from tests.backends.slurmrun import status_of
    assert r.returncode != 0, r.stdout + r.stderr
    assert cause in r.stderr.strip().splitlines()[-1], r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    status = status_of(slurm_cluster, run_id)
    assert status["state"] == "failed" and status["exit_code"] == code, status
    assert cause in status["failure"]["last_line"], status["failure"]
    shown = kit("status", run_id, cwd=workdir(slurm_cluster))
    assert cause in shown.stdout, shown.stdout


def test_a_task_without_accelerate_fails_before_its_launcher_in_one_line(slurm_cluster, tmp_path):
    """Issue 41 item 7: n2's python lacks accelerate (its package directory empty there): the task says so at its
    start, before the launcher (no traceback minutes in), and that line is the run's cause."""
    from tests.backends.drift import emptied_on, package_dir
    from tests.launcher.localrun import reports
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    with emptied_on(slurm_cluster.bed.hosts[1], package_dir("accelerate")):
        r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
                "--run-id", "slurm-no-accelerate", cwd=workdir(slurm_cluster), timeout=240)
    cause = (f"node 1 (n2): {sys.executable} has no module accelerate (pip install accelerate there, or point the "
             f"cluster config's python: or setup: at an environment that has it)")
    _failed_with(slurm_cluster, "slurm-no-accelerate", r, cause, 2)
    assert reports(out) == []   # no rank started
    assert "No module named" not in r.stdout + r.stderr


@pytest.mark.parametrize("mistake", ["setup venv", "python"])
def test_a_typo_in_the_setup_venv_or_python_fails_at_the_tasks_start_in_one_line(slurm_cluster, tmp_path, mistake):
    """A venv path that does not exist on the nodes (setup: source .../activate, or python:) ends each task at its
    start with one line naming it, the run's cause in `kit status`."""
    job = write_job(tmp_path, args=["--out", str(tmp_path)])
    bad = "/opt/no-such-venv/bin"
    fields = ({"setup": [f"source {bad}/activate"]} if mistake == "setup venv" else {"python": f"{bad}/python"})
    run_id = f"slurm-typo-{mistake.split()[0]}"
    cfg = slurm_cluster_config(slurm_cluster, tmp_path / "slurm.yaml", **{"python": sys.executable, **fields})
    r = kit("submit", job, "--cluster", cfg, "--gpus", "0", "--run-id", run_id, cwd=workdir(slurm_cluster),
            timeout=240)
    if mistake == "setup venv":
        _failed_with(slurm_cluster, run_id, r, f"kit: node setup failed (exit 1): source {bad}/activate", 1)
    else:
        _failed_with(slurm_cluster, run_id, r, f"python {bad}/python not found after the setup lines; fix python: "
                     "or setup: in the cluster config", 127)

"""Early stopping on the test clusters. SLURM: a sweep that learns runs each trial as its own 2-node job (no job
array: the study chooses and stops trials as they go), reads each trial's metrics.jsonl from the shared workdir, and
cancels a pruned trial in the queue (scancel of its job): its record says pruned, SLURM says cancelled, and no
process of it is left on any host. SSH: the lines are read over SFTP from node 0's host, and a pruned trial
leaves nothing on any host."""

import json
import os

import yaml

from launcher.backends.slurm.query import sacct_state
from tests.backends.slurmrun import cluster_file, kit, probe_processes, status_of, wait_for, workdir
from tests.sweeps.sweeprun import status_json
from tests.sweeps.test_tuning import CURVE


def _job(tmp_path, nodes: int, steps: int) -> str:
    job = {"name": "curve", "entrypoint": {"script": CURVE}, "args": ["--steps", str(steps), "--sleep", "0.2"],
           "nodes": nodes, "procs_per_node": 1,
           "sweep": {"method": "grid", "metric": "loss", "goal": "min", "parameters": {"--lr": [0.3, 1.5, 2.0]},
                     "early_stopping": {"method": "asha", "min_steps": 2, "reduction_factor": 3}}}
    path = tmp_path / "curve.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return str(path)


def test_asha_over_ssh_reads_curves_over_sftp_and_leaves_nothing_of_a_pruned_trial(ssh_hosts, tmp_path):
    from tests.backends.sshrun import cluster, leftovers
    from tests.backends.sshrun import workdir as ssh_workdir
    here = ssh_workdir(ssh_hosts)
    sweep_id = "ssh-asha"
    r = kit("submit", _job(tmp_path, 1, 60), "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", sweep_id,
            cwd=here, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    view = status_json(here, sweep_id)
    assert [t["state"] for t in view["trials"]] == ["succeeded", "pruned", "pruned"], view["trials"]
    for i in range(3):
        assert leftovers(ssh_hosts, f"{sweep_id}-t{i}") == {}
    for i in (1, 2):
        with open(os.path.join(here, "runs", f"{sweep_id}-t{i}", "status.json")) as f:
            assert json.load(f)["state"] == "pruned"
        assert view["trials"][i]["pruned_at"] < 60


def test_asha_on_slurm_cancels_pruned_trials_in_the_queue(slurm_cluster, tmp_path):
    sweep_id = "slurm-asha"
    argv = ("submit", _job(tmp_path, 2, 80), "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
            "--run-id", sweep_id)
    dry = kit(*argv, "--dry-run", cwd=workdir(slurm_cluster))
    assert dry.returncode == 0 and "early stopping: asha" in dry.stdout and "job array" not in dry.stdout, dry.stdout
    r = kit(*argv, cwd=workdir(slurm_cluster), timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    view = status_json(workdir(slurm_cluster), sweep_id)
    assert [t["state"] for t in view["trials"]] == ["succeeded", "pruned", "pruned"], view["trials"]
    assert view["counts"] == {"succeeded": 1, "pruned": 2}
    with open(os.path.join(workdir(slurm_cluster), "runs", sweep_id, "sweep.json")) as f:
        assert "array_job_id" not in json.load(f)
    for i in (1, 2):
        st = status_of(slurm_cluster, f"{sweep_id}-t{i}")
        assert st["state"] == "pruned", st
        job_id = st["handle"]["job_id"]
        # Cancelled in the queue, early: its own curve stopped well before its 80 steps.
        assert slurm_cluster.run(["squeue", "-h", "-j", job_id], check=False).stdout.strip() == ""
        assert wait_for(lambda: sacct_state(job_id) == "CANCELLED", timeout=30), sacct_state(job_id)
        lines = open(os.path.join(workdir(slurm_cluster), "outputs", f"{sweep_id}-t{i}", "metrics.jsonl")).readlines()
        assert 2 <= len(lines) < 80
    t0 = status_of(slurm_cluster, f"{sweep_id}-t0")
    assert {n["host"] for n in t0["nodes"]} == {"n1", "n2"}     # each trial a full 2-node job
    assert wait_for(lambda: not probe_processes(slurm_cluster, sweep_id), timeout=30)

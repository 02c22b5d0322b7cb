"""Early stopping on the test clusters. SLURM: a sweep that learns runs each trial as its own 2-node job (no job
array: the study chooses and stops trials as they go), reads each trial's metrics.jsonl from the shared workdir, and
cancels a pruned trial in the queue (scancel of its job): its record says pruned, SLURM says cancelled, and no
process of it is left on any host. SSH: the lines are read over SFTP from node 0's host, and a pruned trial
leaves nothing on any host."""

import json
import os

import yaml

from launcher.backends.slurm.queue import sacct_state
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


def test_sigkill_of_kit_mid_sweep_on_slurm_then_the_same_command_finishes_exactly_the_planned_trials(slurm_cluster,
                                                                                                      tmp_path):
    """kit SIGKILLed while a TPE trial's 2-node job runs: the trial's supervisor (its pipe from kit reads EOF)
    cancels the job in the queue; the same command again runs that trial once more with the values TPE gave it and
    the rest of the sweep, each study trial told once, and nothing of the sweep left in the queue or on a host."""
    import signal
    import subprocess
    import sys

    from tests.sweeps.test_tuning import _study_trials

    sweep_id = "slurm-durable"
    job = {"name": "curve", "entrypoint": {"script": CURVE}, "args": ["--steps", "60", "--sleep", "0.3"],
           "nodes": 2, "procs_per_node": 1,
           "sweep": {"method": "tpe", "trials": 4, "seed": 3, "metric": "loss", "goal": "min",
                     "parameters": {"--lr": {"low": 0.0, "high": 1.0}},
                     "early_stopping": {"method": "median", "min_steps": 3}}}
    path = tmp_path / "durable.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    here = workdir(slurm_cluster)
    argv = ("submit", str(path), "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
            "--run-id", sweep_id)
    proc = subprocess.Popen([sys.executable, "-m", "launcher", *argv], cwd=here, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    killed_job = ""
    try:
        # Kill kit while trial 2 (chosen by TPE, past its startup draw of 2) runs as a SLURM job.
        assert wait_for(lambda: os.path.isfile(os.path.join(here, "outputs", f"{sweep_id}-t2", "metrics.jsonl")),
                        timeout=400)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with open(os.path.join(here, "runs", sweep_id, "sweep.json")) as f:
        killed = json.load(f)["trials"][2]
    assert killed.get("asked") is not None and killed["params"] is not None
    killed_job = status_of(slurm_cluster, f"{sweep_id}-t2")["handle"]["job_id"]
    # Cancelled in the queue by the trial's supervisor, its record no longer running.
    assert wait_for(lambda: sacct_state(killed_job) == "CANCELLED", timeout=60), sacct_state(killed_job)
    assert wait_for(lambda: status_of(slurm_cluster, f"{sweep_id}-t2")["state"] not in ("starting", "running"),
                    timeout=60)
    r = kit(*argv, cwd=here, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    view = status_json(here, sweep_id)
    assert [t["index"] for t in view["trials"]] == list(range(4))
    assert all(t["state"] in ("succeeded", "pruned") for t in view["trials"]), view["trials"]
    assert view["trials"][2]["params"] == killed["params"]      # the killed trial ran again with its values
    assert status_of(slurm_cluster, f"{sweep_id}-t2")["handle"]["job_id"] != killed_job
    trials = _study_trials(os.path.join(here, "runs"), sweep_id)
    finished = [t for t in trials if t.state.name in ("COMPLETE", "PRUNED")]
    assert sorted(t.user_attrs["kit_trial"] for t in finished) == list(range(4))   # each once, none twice
    assert not [t for t in trials if t.state.name in ("RUNNING", "WAITING")]
    assert slurm_cluster.run(["squeue", "-h"], check=False).stdout.strip() == ""
    assert wait_for(lambda: not probe_processes(slurm_cluster, sweep_id), timeout=30)

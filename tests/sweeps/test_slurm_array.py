"""A sweep on the real SLURM test cluster is ONE job array of 2-node jobs: 4 trials of the training module run as
4 tasks of one array job, at most 2 at once, each a full 2-node job; every trial's record and outputs are an
ordinary run's. A failing trial fails alone; a re-run submits only the trials still to do. Ctrl-C stops following
only; `kit cancel` of one trial ends its array task, of the sweep the whole array, leaving no process."""

import json
import os
import signal

import yaml

from launcher.backends.slurm.queue import sacct_state
from tests.backends.slurmrun import (
    cluster_file,
    kit,
    kit_background,
    probe_processes,
    status_of,
    wait_for,
    wait_state,
    workdir,
    write_job,
)
from tests.sweeps.sweeprun import probe_job, status_json
from tests.train.support import synthetic_rows, tiny_args, write_csv

PARAMS = {"--lr": [0.001, 0.002], "--batch-size": [8, 16]}


def _sweep_file(tmp_path, **fields) -> str:
    spec = {"method": "grid", "metric": "test.accuracy", "goal": "max", "parallel": 2, "parameters": PARAMS,
            **fields}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _sweep_record(slurm_cluster, sweep_id) -> dict:
    with open(os.path.join(workdir(slurm_cluster), "runs", sweep_id, "sweep.json")) as f:
        return json.load(f)


def _array_rows(slurm_cluster, array_id) -> dict:
    """sacct's rows of the array job: task job id (<array>_<index>) -> state. slurmdbd may list a one-task array
    under its bare id for a moment after the task ended (seen once in CI: {'21': 'FAILED'}), until the task's id
    reaches the database: read until every row has its task id, or 20 s."""
    rows = {}

    def read():
        nonlocal rows
        out = slurm_cluster.run(["sacct", "-n", "-X", "-P", "-j", array_id, "-o", "JobID,State"]).stdout
        rows = dict(line.split("|")[:2] for line in out.splitlines() if line.strip())
        return rows and all("_" in job for job in rows)

    wait_for(read, timeout=20)
    return rows


def test_a_sweep_is_one_job_array_of_two_node_trials(slurm_cluster, tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(120))
    args = tiny_args(data, tmp_path / "unused", tmp_path / "cache", "--max-steps", "3", "--no-save-model")
    job = write_job(tmp_path, name="swp", nodes=2, args=args, entrypoint={"module": "train"})
    sweep_id = "slurm-sweep"
    argv = ("submit", job, "--sweep", _sweep_file(tmp_path), "--cluster",
            cluster_file(slurm_cluster, tmp_path, cpu_threads_per_process=1), "--gpus", "0", "--run-id", sweep_id)
    dry = kit(*argv, "--dry-run", "--format", "json", cwd=workdir(slurm_cluster))
    assert dry.returncode == 0, dry.stderr
    r = kit(*argv, cwd=workdir(slurm_cluster), timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    array_id = _sweep_record(slurm_cluster, sweep_id)["array_job_id"]
    assert f"submitted SLURM job array {array_id} (4 trial(s), at most 2 at once)" in r.stderr
    # SLURM holds exactly the script the dry-run showed.
    held = slurm_cluster.run(["scontrol", "write", "batch_script", array_id, "-"]).stdout
    assert held == json.loads(dry.stdout)["array"]["script"]
    # One array job with 4 tasks, nothing else: the sweep was submitted once.
    rows = _array_rows(slurm_cluster, array_id)
    assert rows == {f"{array_id}_{i}": "COMPLETED" for i in range(4)}, rows
    # sacct (what status reads once the controller forgot a job) knows each task by its id.
    assert [sacct_state(f"{array_id}_{i}") for i in range(4)] == ["COMPLETED"] * 4
    for i in range(4):
        run_id = f"{sweep_id}-t{i}"
        st = status_of(slurm_cluster, run_id)
        assert st["state"] == "succeeded" and st["exit_code"] == 0, st
        assert st["handle"]["job_id"] == f"{array_id}_{i}"
        # A full 2-node job: machine ranks 0 and 1, on two different hosts.
        assert {n["host"] for n in st["nodes"]} == {"n1", "n2"}, st["nodes"]
        run_dir = os.path.join(workdir(slurm_cluster), "runs", run_id)
        for rank in (0, 1):
            with open(os.path.join(run_dir, f"node{rank}.log"), encoding="utf-8") as f:
                assert f"[node{rank}/rank{rank}]" in f.read()
        # The task's batch output sits in the trial's own run dir, named by the job id its record holds.
        with open(os.path.join(run_dir, f"slurm-{array_id}_{i}.out"), encoding="utf-8") as f:
            assert f"kit: array task {i} of sweep {sweep_id} runs trial {run_id}" in f.read()
        metrics = os.path.join(workdir(slurm_cluster), "outputs", run_id, "metrics.json")
        with open(metrics, encoding="utf-8") as f:
            assert "accuracy" in json.load(f)["test"]
    # Each trial is an ordinary SLURM run for the record commands.
    s = kit("status", f"{sweep_id}-t3", cwd=workdir(slurm_cluster))
    assert "state succeeded" in s.stdout and "exit code 0" in s.stdout, s.stdout + s.stderr
    # The sweep's table: 4 succeeded trials with their metric, one marked best.
    table = kit("sweep", "status", sweep_id, "--format", "json", cwd=workdir(slurm_cluster))
    assert table.returncode == 0, table.stderr
    view = json.loads(table.stdout)
    assert [(t["run_id"], t["state"]) for t in view["trials"]] == [(f"{sweep_id}-t{i}", "succeeded") for i in range(4)]
    assert all(isinstance(t["metric"], float) for t in view["trials"]), view["trials"]
    best = max(view["trials"], key=lambda t: t["metric"])
    assert view["best"] == best["run_id"] and view["state"] == "succeeded", view


def test_a_failing_trial_fails_alone_and_a_rerun_submits_only_it(slurm_cluster, tmp_path):
    job = write_job(tmp_path, name="swpf", nodes=2)
    sweep = _sweep_file(tmp_path, output_arg="--out", output_root="probe-fail", metric="rank",
                        parameters={"--fail-rank": [-1, 1]})
    sweep_id = "slurm-sweep-fail"
    for i in range(2):
        os.makedirs(os.path.join(workdir(slurm_cluster), "probe-fail", f"{sweep_id}-t{i}"))
        # The metrics file the rank probe does not write (a re-run checks sweep.metric against the trial that
        # succeeded before).
        with open(os.path.join(workdir(slurm_cluster), "probe-fail", f"{sweep_id}-t{i}", "metrics.json"), "w") as f:
            json.dump({"rank": 0}, f)
    argv = ("submit", job, "--sweep", sweep, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
            "--run-id", sweep_id)
    r = kit(*argv, cwd=workdir(slurm_cluster), timeout=300)
    good, bad = (status_of(slurm_cluster, f"{sweep_id}-t{i}") for i in range(2))
    assert good["state"] == "succeeded", good
    assert bad["state"] == "failed" and bad["failure"]["node"] == 1 and bad["failure"]["host"] == "n2", bad
    assert r.returncode == bad["exit_code"] != 0, r.stderr[-3000:]
    assert f"kit: run {sweep_id}-t1 failed: node 1 (n2)" in r.stderr
    # Again: the trial that succeeded is skipped; the array holds only the other one (--array on the command line).
    again = kit(*argv, cwd=workdir(slurm_cluster), timeout=300)
    array_id = _sweep_record(slurm_cluster, sweep_id)["array_job_id"]
    assert (f"submitted SLURM job array {array_id} (1 trial(s), at most 2 at once; 1 succeeded before): "
            f"sbatch --parsable --array=1%2 runs/{sweep_id}/sweep.sbatch") in again.stderr, again.stderr[-3000:]
    assert _array_rows(slurm_cluster, array_id) == {f"{array_id}_1": "FAILED"}
    assert again.returncode == status_of(slurm_cluster, f"{sweep_id}-t1")["exit_code"] != 0


def test_ctrl_c_follows_no_more_and_cancel_ends_a_trial_or_the_whole_array(slurm_cluster, tmp_path):
    job = write_job(tmp_path, name="swpc", nodes=2, args=["--linger", "300"])
    sweep = _sweep_file(tmp_path, output_arg="--out", output_root="probe-out", metric="rank",
                        parameters={"--fail-code": [3, 4, 5, 6]})
    sweep_id = "slurm-sweep-cancel"
    out = os.path.join(workdir(slurm_cluster), "probe-out")
    for i in range(4):  # the probe writes into its --out directory; the training module makes its own
        os.makedirs(os.path.join(out, f"{sweep_id}-t{i}"))
    proc = kit_background("submit", job, "--sweep", sweep, "--cluster", cluster_file(slurm_cluster, tmp_path),
                          "--gpus", "0", "--run-id", sweep_id, cwd=workdir(slurm_cluster))

    def ready(i):
        return len([n for n in os.listdir(os.path.join(out, f"{sweep_id}-t{i}")) if n.endswith(".json")]) == 2
    # Two trials (2 nodes each) run at once; the other two wait in the array.
    assert wait_for(lambda: ready(0) and ready(1), timeout=120), proc.stdout.read() if proc.poll() else ""
    assert not ready(2) and not ready(3)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, output
    assert "stopped following; the job array keeps running" in output and f"kit cancel {sweep_id}" in output
    # One trial cancelled through its own record (job id <array>_0): the array goes on with the next trial.
    c = kit("cancel", f"{sweep_id}-t0", cwd=workdir(slurm_cluster), timeout=180)
    assert c.returncode == 0 and "cancelled" in c.stdout, c.stdout + c.stderr
    assert wait_for(lambda: ready(2), timeout=120)
    c = kit("cancel", sweep_id, cwd=workdir(slurm_cluster), timeout=180)
    assert c.returncode == 0, c.stdout + c.stderr
    assert wait_for(lambda: not probe_processes(slurm_cluster, sweep_id), timeout=30), \
        probe_processes(slurm_cluster, sweep_id)
    states = [status_of(slurm_cluster, f"{sweep_id}-t{i}")["state"] for i in range(4)]
    assert states == ["cancelled"] * 4, states
    array_id = _sweep_record(slurm_cluster, sweep_id)["array_job_id"]
    assert slurm_cluster.run(["squeue", "-h", "-j", array_id], check=False).stdout.strip() == ""


def test_time_limit_warning_requeues_one_array_task_which_runs_again(slurm_cluster, tmp_path):
    # The trial's own script runs inside the array task: its USR1 trap (the time-limit warning reaches the batch
    # shell, which exec'd it) requeues that task alone, by the task's own $SLURM_JOB_ID; the ranks checkpoint.
    job = write_job(tmp_path, name="swpr", nodes=2, args=["--linger", "300", "--on-term", "save:1"])
    sweep = _sweep_file(tmp_path, output_arg="--out", output_root="probe-requeue", metric="rank",
                        parameters={"--fail-code": [3]})
    sweep_id, run_id = "slurm-sweep-requeue", "slurm-sweep-requeue-t0"
    out = os.path.join(workdir(slurm_cluster), "probe-requeue", run_id)
    os.makedirs(out)
    r = kit("submit", job, "--sweep", sweep, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
            "--run-id", sweep_id, "--detach", cwd=workdir(slurm_cluster), timeout=120)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: len([n for n in os.listdir(out) if n.startswith("rank")]) == 2, timeout=120)
    job_id = status_of(slurm_cluster, run_id)["handle"]["job_id"]
    slurm_cluster.run(["scancel", "--batch", "--signal=USR1", job_id])
    assert wait_state(slurm_cluster, job_id, ("PENDING",), timeout=60)
    assert wait_for(lambda: {"ckpt0", "ckpt1"} <= set(os.listdir(out)), timeout=30), os.listdir(out)
    s = kit("status", run_id, cwd=workdir(slurm_cluster))
    assert "state requeued" in s.stdout and "requeued 1 time(s)" in s.stdout, s.stdout
    slurm_cluster.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"])
    batch = os.path.join(workdir(slurm_cluster), "runs", run_id, f"slurm-{job_id}.out")
    assert wait_for(lambda: "attempt 2 after 1 requeue(s)" in open(batch).read(), timeout=120), open(batch).read()
    assert wait_state(slurm_cluster, job_id, ("RUNNING",), timeout=60)
    c = kit("cancel", sweep_id, cwd=workdir(slurm_cluster), timeout=180)
    assert c.returncode == 0 and "cancelled" in c.stdout, c.stdout + c.stderr
    assert wait_for(lambda: not probe_processes(slurm_cluster, sweep_id), timeout=30)


def test_a_metric_the_trials_do_not_write_cancels_the_array_and_a_corrected_one_reuses_its_trials(slurm_cluster,
                                                                                                   tmp_path):
    # metric: loss while the probe writes final.loss. Trial 0 ends at once, trials 1 and 2 wait for their `go`
    # files: trial 0's metrics.json stops the sweep, and its job array (one job to SLURM) is cancelled as
    # `kit cancel` does. (A trial that does not wait could start and end in the moment before the check.)
    go = [tmp_path / "go1", tmp_path / "go2"]
    job = probe_job(tmp_path, {"metric": "loss", "parallel": 2,
                               "parameters": {"--wait-for": ["none", *map(str, go)]}})
    sweep_id = "slurm-sweep-metric"
    argv = ("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id", sweep_id)
    r = kit(*argv, cwd=workdir(slurm_cluster), timeout=300)
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.splitlines()[-1] == (
        f"kit: sweep {sweep_id}: sweep.metric loss names no number in trial 0's metrics.json (outputs/{sweep_id}-t0/"
        f"metrics.json), which has score, evals.-1.accuracy, final.loss (did you mean final.loss?); its other "
        f"trials were cancelled; fix sweep.metric and run the same command again: the trials that succeeded are "
        f"kept"), r.stderr[-3000:]
    states = [status_of(slurm_cluster, f"{sweep_id}-t{i}")["state"] for i in range(3)]
    assert states == ["succeeded", "cancelled", "cancelled"], states
    array_id = _sweep_record(slurm_cluster, sweep_id)["array_job_id"]
    assert slurm_cluster.run(["squeue", "-h", "-j", array_id], check=False).stdout.strip() == ""
    assert not probe_processes(slurm_cluster, sweep_id)

    # Corrected: the same sweep; trial 0 is kept, the other two are submitted again, and all are scored with it.
    data = yaml.safe_load(open(job))
    data["sweep"]["metric"] = "final.loss"
    data["sweep"]["goal"] = "min"
    open(job, "w").write(yaml.safe_dump(data, sort_keys=False))
    for path in go:
        path.write_text("")
    again = kit(*argv, cwd=workdir(slurm_cluster), timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "(2 trial(s), at most 2 at once; 1 succeeded before)" in again.stderr, again.stderr[-3000:]
    view = status_json(workdir(slurm_cluster), sweep_id)
    assert view["metric"] == "final.loss" and view["state"] == "succeeded"
    assert [t["metric"] for t in view["trials"]] == [1.0, 1.0, 1.0] and view["best"] == f"{sweep_id}-t0"

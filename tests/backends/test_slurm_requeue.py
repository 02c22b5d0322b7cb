"""Preemption on the real cluster. `scontrol requeue` of a running training job, then the time-limit warning
(the batch shell's USR1, as `--signal=B:USR1@S` sends it): each time every rank checkpoints on SIGTERM, SLURM
requeues the job, the rerun resumes from that checkpoint; the job finishes and kit never calls it failed."""

import json
import re
import time

from tests.backends.slurmrun import cluster_file, job_id_of, kit, kit_background, status_of, wait_for, wait_state, \
    workdir, write_job
from tests.train.support import synthetic_rows, tiny_args, write_csv

STEPS = 60


def _train_job(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    args = tiny_args(data, tmp_path / "out", tmp_path / "cache", "--max-steps", str(STEPS), "--save-every", "10",
                     "--log-every", "5")
    at = args.index("--resume")
    return write_job(tmp_path, name="train2", nodes=2, args=args[:at] + args[at + 2:], entrypoint={"module": "train"})


def _log(run_dir) -> str:
    try:
        return open(f"{run_dir}/node0.log", encoding="utf-8", errors="replace").read()
    except OSError:
        return ""


def _steps_this_attempt(run_dir) -> int:
    text = _log(run_dir).split("resumed from")[-1]
    # Rank 0's logged step lines, tagged [node0/rank0] as on every backend.
    return max((int(n) for n in re.findall(r"^\[node0/rank0\] step (\d+)/", text, re.M)), default=0)


def _requeued_then_released(slurm_cluster, job_id, restarts):
    assert wait_state(slurm_cluster, job_id, ("PENDING",), timeout=60)
    s = kit("status", "slurm-requeue", cwd=workdir(slurm_cluster))
    assert "state requeued" in s.stdout and f"requeued {restarts} time(s)" in s.stdout, s.stdout
    # SLURM holds a requeued job back ~120 s (BeginTime); release it at once, as an admin may.
    slurm_cluster.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"])


def test_requeue_and_time_limit_warning_checkpoint_requeue_and_resume(slurm_cluster, tmp_path):
    job = _train_job(tmp_path)
    started = time.monotonic()
    proc = kit_background("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
                          "--run-id", "slurm-requeue", cwd=workdir(slurm_cluster))
    run_dir = f"{workdir(slurm_cluster)}/runs/slurm-requeue"
    job_id = job_id_of(slurm_cluster, "slurm-requeue")
    assert wait_for(lambda: _steps_this_attempt(run_dir) >= 15, timeout=150, interval=0.1), _log(run_dir)[-3000:]
    slurm_cluster.run(["scontrol", "requeue", job_id])          # preemption
    _requeued_then_released(slurm_cluster, job_id, 1)
    assert wait_for(lambda: "resumed from" in _log(run_dir) and _steps_this_attempt(run_dir) >= 35, timeout=150,
                    interval=0.1), _log(run_dir)[-3000:]
    slurm_cluster.run(["scancel", "--batch", "--signal=USR1", job_id])   # the time-limit warning
    _requeued_then_released(slurm_cluster, job_id, 2)
    output, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, output[-4000:]
    log = _log(run_dir)
    saved = re.findall(r"preempted at step (\d+)", log)
    resumed = re.findall(r"resumed from \S+ at step (\d+)", log)
    # Each resume continues the checkpoint its preemption wrote: nothing past the last checkpoint is lost.
    assert len(saved) == 2 and saved == resumed, log[-4000:]
    assert "failed" not in output and "requeued 2 time(s)" in output
    assert "kit: run slurm-requeue succeeded (exit code 0)" in output
    st = status_of(slurm_cluster, "slurm-requeue")
    assert st["state"] == "succeeded" and st["handle"]["restarts"] == 2
    # Both requeues by the queue are attempts of the run, each with its cause.
    listed = json.loads(kit("status", "slurm-requeue", "--json", cwd=workdir(slurm_cluster)).stdout)["attempts"]
    assert [(a["attempt"], a["state"]) for a in listed] == [(1, "requeued"), (2, "requeued"), (3, "succeeded")]
    assert "preemption" in listed[0]["cause"] and "time limit" in listed[1]["cause"], listed
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())
    print(f"two requeues, whole run {time.monotonic() - started:.1f} s; checkpoints at steps {saved}")


def test_real_time_limit_warning_reaches_the_batch_shell_and_ranks_checkpoint(slurm_cluster, tmp_path):
    # SLURM may send the warning up to 60 s before the time asked for (its event resolution): with --time=2 and
    # the warning 30 s before the end it comes 30-90 s after the start, after the ranks are ready. No requeue
    # left, so the trap sends SIGTERM to the step's processes: every rank saves its checkpoint, then the job ends
    # as `timeout`.
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=2, args=["--out", str(out), "--linger", "300", "--on-term", "save:1"])
    cluster = cluster_file(slurm_cluster, tmp_path, slurm={"partition": slurm_cluster.partition, "time": "2",
                                                           "signal_before": 30, "max_requeues": 0})
    r = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "slurm-timelimit",
            cwd=workdir(slurm_cluster), timeout=180)
    assert r.returncode != 0
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("ckpt")) == ["ckpt0", "ckpt1"], r.stderr
    run_dir = f"{workdir(slurm_cluster)}/runs/slurm-timelimit"
    job_id = status_of(slurm_cluster, "slurm-timelimit")["handle"]["job_id"]
    batch = open(f"{run_dir}/slurm-{job_id}.out").read()
    assert "kit: time limit near, no requeue left: stopping" in batch, batch
    # The job ran out of time with its checkpoint saved: `timeout`, never a plain failure.
    st = status_of(slurm_cluster, "slurm-timelimit")
    assert st["state"] == "timeout" and st["failure"] is None, st
    assert "no requeue left (slurm.max_requeues=0)" in r.stderr and "kit: run slurm-timelimit timeout" in r.stderr
    assert "failed" not in r.stderr, r.stderr
    s = kit("status", "slurm-timelimit", cwd=workdir(slurm_cluster))
    assert "state timeout" in s.stdout and "no requeue left" in s.stdout, s.stdout

"""Ending SLURM runs: a killed rank fails the whole job fast, cancel leaves nothing, Ctrl-C stops following only,
and a finished job's status is its true result."""

import os
import signal
import time

from tests.backends.slurmrun import (cluster_file, job_id_of, kit, kit_background, probe_processes, status_of,
                                     wait_for, wait_state, workdir, write_job)
from tests.launcher.localrun import reports


def _start(slurm_cluster, tmp_path, run_id, *extra, detach=False):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    job = write_job(tmp_path, nodes=2, args=["--out", str(out), *extra])
    argv = ("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id", run_id)
    if detach:
        r = kit(*argv, "--detach", cwd=workdir(slurm_cluster), timeout=60)
        assert r.returncode == 0, r.stderr
        return r, out
    return kit_background(*argv, cwd=workdir(slurm_cluster)), out


def _nothing_left(slurm_cluster, run_id, timeout=15.0):
    assert wait_for(lambda: not probe_processes(slurm_cluster, run_id), timeout=timeout), \
        probe_processes(slurm_cluster, run_id)


def test_killed_rank_fails_the_job_within_30s_and_leaves_nothing(slurm_cluster, tmp_path):
    proc, out = _start(slurm_cluster, tmp_path, "slurm-kill", "--linger", "300")
    assert wait_for(lambda: len(reports(out)) == 2, timeout=90), proc.stdout.read() if proc.poll() else ""
    host = slurm_cluster.bed.hosts[1]
    ranks = [p for p in host.processes() if "rank_probe.py" in " ".join(p["cmdline"])
             and "accelerate" not in " ".join(p["cmdline"])]
    assert len(ranks) == 1, ranks
    killed = time.monotonic()
    os.kill(ranks[0]["pid"], signal.SIGKILL)
    output, _ = proc.communicate(timeout=60)
    took = time.monotonic() - killed
    print(f"killed rank -> kit exits after {took:.1f} s")
    assert took < 30
    assert proc.returncode != 0, output
    st = status_of(slurm_cluster, "slurm-kill")
    assert st["state"] == "failed", st
    assert st["failure"]["node"] == 1 and st["failure"]["host"] == "n2", st["failure"]
    assert "kit: run slurm-kill failed: node 1 (n2)" in output
    _nothing_left(slurm_cluster, "slurm-kill")


def test_cancel_leaves_no_process_on_either_node(slurm_cluster, tmp_path):
    r, out = _start(slurm_cluster, tmp_path, "slurm-cancel", "--linger", "300", detach=True)
    assert "kit cancel slurm-cancel" in r.stderr
    assert wait_for(lambda: len(reports(out)) == 2, timeout=90)
    logs = kit("logs", "slurm-cancel", "--node", "1", cwd=workdir(slurm_cluster))
    assert "probe rank 1/2 ready" in logs.stdout and "rank 0/2" not in logs.stdout, logs.stdout
    c = kit("cancel", "slurm-cancel", cwd=workdir(slurm_cluster), timeout=150)
    assert c.returncode == 0 and "cancelled" in c.stdout, c.stdout + c.stderr
    _nothing_left(slurm_cluster, "slurm-cancel")
    s = kit("status", "slurm-cancel", cwd=workdir(slurm_cluster))
    assert "state cancelled" in s.stdout, s.stdout


def test_ctrl_c_while_following_leaves_the_job_running(slurm_cluster, tmp_path):
    proc, out = _start(slurm_cluster, tmp_path, "slurm-ctrlc", "--linger", "300")
    assert wait_for(lambda: len(reports(out)) == 2, timeout=90)
    job_id = job_id_of(slurm_cluster, "slurm-ctrlc")
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, output
    assert "stopped following; the job keeps running" in output and "kit cancel slurm-ctrlc" in output
    assert "--run-root" not in output, output   # kit's index finds the run by its id (issue 41)
    assert wait_state(slurm_cluster, job_id, ("RUNNING",), timeout=5)
    s = kit("status", "slurm-ctrlc", cwd=workdir(slurm_cluster))
    assert "state running" in s.stdout and "on n[1-2]" in s.stdout, s.stdout
    kit("cancel", "slurm-ctrlc", cwd=workdir(slurm_cluster), timeout=150)
    _nothing_left(slurm_cluster, "slurm-ctrlc")


def test_status_of_a_job_that_finished_unwatched_is_its_true_result(slurm_cluster, tmp_path):
    # Not the probe: a rank leaving a gloo world with sys.exit can abort in C++ (exit 134) instead of exiting 3.
    script = tmp_path / "exit_rank1.py"
    script.write_text("import os, sys\nprint('rank', os.environ['RANK'], flush=True)\n"
                      "sys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    job = write_job(tmp_path, name="exit3", nodes=2, entrypoint={"script": str(script)})
    r = kit("submit", job, "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0", "--run-id",
            "slurm-done", "--detach", cwd=workdir(slurm_cluster), timeout=60)
    assert r.returncode == 0, r.stderr
    job_id = job_id_of(slurm_cluster, "slurm-done")
    # A node whose ranks all finished waits in torchrun's exit barrier, which ignores SIGTERM, so the job ends
    # only at SLURM's KillWait (30 s) after the other node failed.
    assert wait_for(lambda: slurm_cluster.run(["squeue", "-h", "-j", job_id], check=False).stdout.strip() == "",
                    timeout=90)
    assert status_of(slurm_cluster, "slurm-done")["state"] == "pending"   # nobody followed it
    s = kit("status", "slurm-done", cwd=workdir(slurm_cluster))
    assert "state failed" in s.stdout and "exit code 3" in s.stdout, s.stdout
    st = status_of(slurm_cluster, "slurm-done")
    assert st["exit_code"] == 3 and st["state"] == "failed"
    runs = kit("runs", cwd=workdir(slurm_cluster))
    assert "slurm-done" in runs.stdout and "failed" in runs.stdout

"""restarts on SLURM (issue 20): a rank of a 2-node training job killed with SIGKILL after a checkpoint; kit
requeues the job (the batch shell's requeue count and kit's restarts share slurm.max_requeues), the training module
resumes from its checkpoint on the new allocation, and the run succeeds with the attempt in its record."""

import json
import os
import signal

import yaml

from tests.backends.slurmrun import cluster_file, kit_background, status_of, wait_for, workdir
from tests.train.support import resumable_args, synthetic_rows, write_csv


def _rank_pid(slurm_cluster, run_id: str, rank: int):
    for host in slurm_cluster.bed.hosts:
        for p in host.processes():
            try:
                with open(f"/proc/{p['pid']}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if f"KIT_RUN_ID={run_id}".encode() in env and f"RANK={rank}".encode() in env:
                return p["pid"]
    return None


def test_a_killed_rank_requeues_the_job_which_resumes(slurm_cluster, tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    out = tmp_path / "out"
    args = resumable_args(data, out, tmp_path / "cache", "--max-steps", "60", "--save-every", "10",
                          "--no-save-model", "--log-every", "10")
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "requeued", "entrypoint": {"module": "train"}, "args": args, "nodes": 2,
                                   "procs_per_node": 1, "restarts": 1}))
    proc = kit_background("submit", str(job), "--cluster", cluster_file(slurm_cluster, tmp_path), "--gpus", "0",
                          "--run-id", "slurm-restart", cwd=workdir(slurm_cluster))
    try:
        ckpts = out / "checkpoints"
        assert wait_for(lambda: ckpts.is_dir() and any(n.startswith("step-") for n in os.listdir(ckpts)),
                        timeout=300), "no checkpoint"
        pid = _rank_pid(slurm_cluster, "slurm-restart", 1)
        assert pid, "rank 1 not found"
        os.kill(pid, signal.SIGKILL)
        output, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    kit_lines = "\n".join(ln for ln in output.splitlines() if ln.startswith("kit:"))
    assert proc.returncode == 0, kit_lines + "\n...\n" + output[-3000:]
    assert "kit: run slurm-restart attempt 2/2 after: node 1 (n2) rank 1 killed by SIGKILL (exit code 137; out of memory?" in output, \
        output[-4000:]
    resumed = [ln for ln in output.splitlines() if "resumed from" in ln]
    assert resumed and " at step 0 " not in resumed[0], resumed
    st = status_of(slurm_cluster, "slurm-restart")
    assert st["state"] == "succeeded" and st["handle"]["restarts"] == 1 and len(st["attempts"]) == 1, st

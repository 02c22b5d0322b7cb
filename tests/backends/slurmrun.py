"""Helpers for the SLURM backend tests: a kit cluster config and probe jobs on the harness cluster, kit runs in
the cluster's workdir (where the run records live), and what is left of a run inside each host."""

import json
import os
import sys
import time

from tests.harness.configs import slurm_cluster_config
from tests.launcher.localrun import kit, kit_background, wait_for, write_job

__all__ = ["kit", "kit_background", "wait_for", "write_job", "cluster_file", "workdir", "status_of",
           "probe_processes", "queue", "job_id_of"]


def cluster_file(slurm_cluster, tmp_path, **fields) -> str:
    return slurm_cluster_config(slurm_cluster, tmp_path / "slurm.yaml", python=sys.executable, **fields)


def workdir(slurm_cluster) -> str:
    return slurm_cluster.bed.path("work")


def status_of(slurm_cluster, run_id) -> dict:
    with open(os.path.join(workdir(slurm_cluster), "runs", run_id, "status.json")) as f:
        return json.load(f)


def job_id_of(slurm_cluster, run_id, timeout=30.0) -> str:
    # The record holds every field from its first write (job_id null until sbatch answered).
    assert wait_for(lambda: (status_of_or_empty(slurm_cluster, run_id).get("handle") or {}).get("job_id"),
                    timeout=timeout), f"run {run_id} has no SLURM job id after {timeout:.0f} s"
    return status_of(slurm_cluster, run_id)["handle"]["job_id"]


def status_of_or_empty(slurm_cluster, run_id) -> dict:
    try:
        return status_of(slurm_cluster, run_id)
    except (OSError, ValueError):
        return {}


def probe_processes(slurm_cluster, run_id) -> dict:
    """host name -> processes of this run still alive inside that host's PID namespace."""
    left = {}
    for host in slurm_cluster.bed.hosts:
        procs = [p for p in host.processes() if run_id in " ".join(p["cmdline"]) or "rank_probe" in " ".join(p["cmdline"])]
        if procs:
            left[host.name] = [" ".join(p["cmdline"])[:120] for p in procs]
    return left


def queue(slurm_cluster) -> list[str]:
    return slurm_cluster.run(["squeue", "-h", "-o", "%i %T"]).stdout.split("\n")[:-1]


def wait_state(slurm_cluster, job_id, states, timeout=60.0) -> bool:
    def now():
        return slurm_cluster.run(["squeue", "-h", "-j", job_id, "-o", "%T"], check=False).stdout.strip()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if now() in states:
            return True
        time.sleep(0.2)
    return False

"""How a SLURM run ended, and what its record says now: from SLURM's final state, the exit codes the nodes wrote
into the run directory and the node logs (the same failure summary as every other backend)."""

import os
from typing import Optional

from launcher.backends.slurm_query import JobInfo, node_exit_codes
from launcher.render.slurm import node_exit_file
from launcher.supervise.failure import TRAIN_EXIT_CODES, Failure, read_log, summarize

SIGTERM_EXIT = 143



def describe(info: JobInfo) -> str:
    """One line about the job as SLURM sees it: state, reason while waiting, nodes while running, requeues."""
    text = f"SLURM job {info.job_id} {info.kit_state}"
    if info.kit_state in ("pending", "requeued") and info.reason and info.reason != "None":
        text += f" ({info.reason})"
    if info.kit_state == "running" and info.nodes:
        text += f" on {info.nodes}"
    if info.restarts:
        text += f"; requeued {info.restarts} time(s)"
    return text


def _first_failure(status: dict, codes: list) -> Optional[Failure]:
    failed = [i for i, c in enumerate(codes) if c]
    if not failed:
        return None
    # The node that ended first failed first; the others were stopped because of it (srun --kill-on-bad-exit).
    rank = min(failed, key=lambda i: (_mtime(status, i), i))
    hosts = [n.get("host", "?") for n in status.get("nodes", [])]
    host = hosts[rank] if rank < len(hosts) else "?"
    log = read_log(os.path.join(status["path"], f"node{rank}.log"))
    return summarize(rank, host, codes[rank], log, TRAIN_EXIT_CODES if status.get("train_module") else {})


def _mtime(status: dict, rank: int) -> float:
    try:
        return os.path.getmtime(os.path.join(status["workdir"], node_exit_file(status["run_dir"], str(rank))))
    except OSError:
        return float("inf")


def final_fields(status: dict, info: JobInfo) -> dict:
    """The record's fields for a finished job: state, exit code, per-node codes and the first failure."""
    codes = node_exit_codes(status["workdir"], status["run_dir"], len(status.get("nodes", [])))
    state = info.kit_state
    failure = None
    if state == "succeeded":
        code = 0
    elif state == "cancelled":
        code = info.exit_code or SIGTERM_EXIT
    else:
        failure = _first_failure(status, codes)
        code = failure.code if failure is not None else (info.exit_code or 1)
        if failure is not None and failure.preempted and state == "failed":
            state = "preempted"
    return {"state": state, "exit_code": code, "node_exit_codes": codes, "restarts": info.restarts,
            "slurm_state": info.slurm_state, "failure": None if failure is None else failure.__dict__}


def failure_of(fields: dict) -> Optional[Failure]:
    f = fields.get("failure")
    return None if f is None else Failure(**f)

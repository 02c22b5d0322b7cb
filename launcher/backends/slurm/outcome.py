"""How a SLURM run ended, and what its record says now: from SLURM's final state, the exit codes the nodes wrote
into the run directory, the batch shell's output and the node logs (the same failure summary as every other
backend)."""

import dataclasses
import json
import os
import time
from typing import Optional

from launcher.backends.slurm.files import (
    REQUEUES_EXHAUSTED,
    TIME_LIMIT_NO_REQUEUE,
    batch_output,
    exit_file_mtime,
    node_exit_codes,
    this_attempts_output,
)
from launcher.backends.slurm.query import JobInfo
from launcher.status import NOT_STARTED, Failure
from launcher.supervise.failure import known_codes, read_log, summarize
from launcher.supervise.tracebacks import first_cause
from launcher.states import RunState

SIGTERM_EXIT = 143


def describe(info: JobInfo) -> str:
    """One line about the job as SLURM sees it: state, reason while waiting, nodes while running, requeues."""
    text = f"SLURM job {info.job_id} {info.kit_state or info.slurm_state}"
    if info.kit_state in (RunState.PENDING, RunState.REQUEUED) and info.reason and info.reason != "None":
        text += f" ({info.reason})"
    if info.kit_state == RunState.RUNNING and info.nodes:
        text += f" on {info.nodes}"
    if info.restarts:
        text += f"; requeued {info.restarts} time(s)"
    return text


def _planned(record_path: str) -> dict:
    """The record's plan.json ({} when unreadable): node 0's argv (what the job runs decides what its exit codes
    mean) and the world (how many ranks each node's teed rank logs hold)."""
    try:
        with open(os.path.join(record_path, "plan.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _node_argv(plan: dict) -> list:
    try:
        return plan["nodes"][0]["argv"]
    except (KeyError, IndexError, TypeError):
        return []


def _first_failure(where, status, codes: list, record_path: str) -> Optional[Failure]:
    failed = [i for i, c in enumerate(codes) if c]
    if not failed:
        return None
    # The node that ended first failed first; the others were stopped because of it (srun --kill-on-bad-exit),
    # unless its ranks only died of another node's rank's error (first_cause).
    order = sorted(failed, key=lambda i: (exit_file_mtime(where, status, i), i))
    hosts = [n.host for n in status.nodes]
    plan = _planned(record_path)

    def of(rank: int) -> Failure:
        # The rank's own teed stderr names its error reliably; the node log interleaves its stdout and stderr.
        return summarize(
            rank,
            hosts[rank] if rank < len(hosts) else "?",
            codes[rank],
            read_log(os.path.join(record_path, f"node{rank}.log")),
            known_codes(_node_argv(plan)),
            ranks_dir=os.path.join(record_path, f"node{rank}.ranks"),
            procs_per_node=plan.get("world", {}).get("procs_per_node", 1),
        )

    return first_cause([of(rank) for rank in order])


def settle(where, status, info: JobInfo) -> JobInfo:
    """A job SLURM has forgotten (the controller says its id is invalid, no accounting knows it) has ended: the
    exit code each node's command wrote into the run directory says how. Without them all, it failed (a node was
    killed, or the job was cancelled before it ran)."""
    if not info.forgotten:
        return info
    codes = node_exit_codes(where, status, len(status.nodes))
    if codes and all(c is not None for c in codes):
        bad = [c for c in codes if c]
        return dataclasses.replace(info, slurm_state="FAILED" if bad else "COMPLETED", exit_code=bad[0] if bad else 0)
    return dataclasses.replace(info, slurm_state="FAILED", exit_code=next((c for c in codes if c), None))


def budget_spent(batch_text: str) -> Optional[RunState]:
    """The state a job ends in when its requeue budget was spent, from what its batch shell said, else None.

    The time-limit warning with no requeue left stops the ranks (they checkpoint): the job ran out of time, as
    SLURM's own TIMEOUT says when it kills a job at its limit, and nothing will bring it back, so `timeout`, not
    `preempted` (which promises a requeue) and not `failed` (nothing went wrong). A job requeued from outside
    (preemption) more often than allowed stops before launching: `preempted`, its last checkpoint kept."""
    if TIME_LIMIT_NO_REQUEUE in batch_text:
        return RunState.TIMEOUT
    if REQUEUES_EXHAUSTED in batch_text:
        return RunState.PREEMPTED
    return None


def final_fields(where, status, info: JobInfo, record_path: str, ran: bool = True) -> dict:
    """The record's fields for a finished job: state, exit code, per-node codes and the first failure. `ran`:
    whether kit saw this attempt running (False: it may have ended before any node's command started)."""
    codes = node_exit_codes(where, status, len(status.nodes))
    state = info.kit_state
    failure, ended_by = None, ""
    if state == RunState.SUCCEEDED:
        code = 0
    elif state == RunState.CANCELLED:
        code = info.exit_code or SIGTERM_EXIT
    else:
        batch = batch_output(where, status)
        spent = budget_spent(batch)
        failure = _first_failure(where, status, codes, record_path)
        if (
            failure is None
            and not ran
            and state == RunState.FAILED
            and not info.forgotten
            and codes
            and all(c is None for c in codes)
        ):
            failure = _not_started(status, info, batch)
        code = failure.code if failure is not None else (info.exit_code or 1)
        if spent is not None:
            # Not a failure: the ranks were stopped on purpose. The code stays theirs (75: resumable).
            state, failure, ended_by = spent, None, _ended_by(spent, status)
        elif failure is not None and failure.preempted and state == RunState.FAILED:
            state = RunState.PREEMPTED
    if info.forgotten and not ended_by:
        missing = [str(i) for i, c in enumerate(codes) if c is None]
        ended_by = f"SLURM no longer knows job {info.job_id} and has no accounting; read from the nodes' exit files" + (
            f" (node(s) {', '.join(missing)} wrote none: killed, or never started)" if missing else ""
        )
    return {
        "state": state,
        "exit_code": code,
        "node_exit_codes": codes,
        "restarts": info.restarts,
        "slurm_state": info.slurm_state,
        "failure": failure,
        "ended_by": ended_by,
    }


def _not_started(status, info: JobInfo, batch: str) -> Failure:
    """The job ended before any node's command ran (kit never saw it running, no node wrote its exit code: each
    node's wrapper removes its file first, and kit removes them before it requeues): SLURM's own words, from this
    attempt's output (srun's `error:` line, e.g. a task launch refused), else its state and reason (a batch shell that
    never ran leaves only the controller's log to say why: "Job credential revoked"). Not the job's verdict: a
    restart may follow."""
    mine = this_attempts_output(batch, info.restarts)
    said = [ln.strip() for ln in (mine or "").splitlines() if "error:" in ln]
    out = os.path.join(status.handle.run_dir or "", f"slurm-{info.job_id}.out")
    why = (
        f"{said[-1]} (in {out})"
        if said
        else f"state {info.slurm_state}, reason {info.reason or 'none given'}; the controller's log says why"
    )
    hosts = [n.host for n in status.nodes]
    return Failure(
        0,
        hosts[0] if hosts else "?",
        None,
        info.exit_code or 1,
        NOT_STARTED,
        f"SLURM ended job {info.job_id} before any node's command ran: {why}",
    )


def _ended_by(state: str, status) -> str:
    limit = status.handle.max_requeues
    budget = f" (slurm.max_requeues={limit})" if limit is not None else ""
    if state == RunState.TIMEOUT:
        return (
            f"the time limit came with no requeue left{budget}; the ranks got SIGTERM to checkpoint and stop. "
            "Resubmit (the training module's --resume auto continues from the checkpoint) or raise slurm.time"
        )
    return f"requeued more often than allowed{budget}; resubmit to continue from the last checkpoint"


def failure_of(fields: dict) -> Optional[Failure]:
    return fields.get("failure")


def with_kits_verdict(current, fields: dict) -> dict:
    """`fields` (final_fields of a finished job) as the record `current` lets them stand: a job that ended
    cancelled because kit's own watch cancelled it (`current.stopping`, written before the scancel) ended with that
    watch's verdict, whether the follower, a `kit status` or a `kit cancel` in another shell reads its end first.
    Called under the record's lock (RunRecord.amend), so no reader can have missed the marker."""
    f = current.stopping
    if f is None or fields.get("state") != RunState.CANCELLED:
        return fields
    return {**fields, "state": RunState.FAILED, "exit_code": f.code, "failure": f, "ended_by": ""}


def record_end(record, fields: dict) -> dict:
    """A finished job's end in its record, with kit's own verdict where a watch cancelled it: the fields as applied
    (what the follower, `kit status` and `kit cancel` report)."""
    ended, applied = time.time(), {}

    def change(current):
        applied.update(with_kits_verdict(current, fields))
        return {**applied, "finished_at": ended}

    record.amend(change, attempt_end=True)  # held while kit's restart loop may requeue the job
    return applied

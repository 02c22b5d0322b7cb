"""A run as data, in one stable shape: what `kit status RUN --json` prints, what `kit status` renders as text and
what the Python API's Run.describe() returns.

    run_id, job, backend, record   strings (record: the record's directory)
    state, note                    the state now (asked of the backend) and why, when kit knows more
    exit_code                      the code `kit wait` exits with; null while the run is not over
    failure                        null, or {node, host, rank, exit_code, meaning, last_line, cause}
    attempts                       one per start of the world: {attempt, state, exit_code, cause, started_at,
                                   finished_at, duration_s}; a run never restarted has one
    nodes                          {node, host, pid, exit_code, stopped_by_kit} per node (stopped_by_kit: the
                                   node still ran when the run ended, its exit code is kit's teardown, not its own)
    hosts                          the nodes' hosts, each once, in node order
    job_id                         the scheduler's job id (SLURM), else null
    straggler                      null, or the rank kit named as pacing the world: {node, host, rank, section,
                                   ratio, score, at, own_s, fastest_s, load, cpus, wait_s, threads, line}
                                   (ratio null: the fastest rank took no time; load, cpus, wait_s: its node's load
                                   average, cores, its CPU wait per step; line: what kit status says)
    times                          {created_at, submitted_at, started_at, finished_at, duration_s}: started_at
                                   is when the run began (its first attempt, else its submission or creation)

Times are seconds since the epoch (null when not reached), durations seconds; keys are never removed, only added."""

import time
from typing import Optional

from launcher.records import RunRecord
from launcher.status import Failure, RunStatus
from launcher.supervise.failure import cause
from launcher.core.waiting import end_code


def _span(start: Optional[float], end: Optional[float], going: bool, now: float) -> Optional[float]:
    end = end if end is not None else (now if going else None)
    return round(end - start, 3) if start is not None and end is not None else None


def _failure(f: Optional[Failure]) -> Optional[dict]:
    if f is None:
        return None
    return {
        "node": f.node,
        "host": f.host,
        "rank": f.rank,
        "exit_code": f.code,
        "meaning": f.meaning,
        "last_line": f.last_line,
        "cause": cause(f),
    }


def _straggler(s: Optional[dict]) -> Optional[dict]:
    if not s:
        return None
    from launcher.insight.stragglers import from_record, line

    return {**s, "line": line(from_record(s), s["host"])}


def attempts(status: RunStatus, state: str, code: Optional[int], now: float) -> list[dict]:
    """Every attempt: the earlier ones as recorded when kit started the world again, then the current one."""
    out = []
    for a in status.attempts:
        out.append(
            {
                "attempt": a.get("attempt"),
                "state": a.get("state"),
                "exit_code": a.get("exit_code"),
                "cause": a.get("cause") or "",
                "started_at": a.get("started_at"),
                "finished_at": a.get("finished_at"),
                "duration_s": _span(a.get("started_at"), a.get("finished_at"), False, now),
            }
        )
    # The current attempt began when its world last started (local, SSH; SLURM: when the follower saw it running),
    # never before the last listed attempt ended; not started yet: since that end, or the submission.
    last_end = status.attempts[-1].get("finished_at") if status.attempts else None
    start = status.started_at
    if start is None or (last_end is not None and start < last_end):
        start = last_end or status.submitted_at
    going = code is None
    out.append(
        {
            "attempt": len(status.attempts) + 1,
            "state": state,
            "exit_code": code,
            "cause": cause(status.failure) if status.failure else "",
            "started_at": start,
            "finished_at": status.finished_at,
            "duration_s": _span(start, status.finished_at, going, now),
        }
    )
    return out


def describe(record: RunRecord, status: RunStatus, state: str, note: str, now: Optional[float] = None) -> dict:
    """The run's data (`status`: its record read after asking the backend for `state`, which may update it)."""
    now = time.time() if now is None else now
    code = end_code(state, status)
    codes = status.node_exit_codes
    nodes = [
        {
            "node": n.rank,
            "host": n.host,
            "pid": n.pid,
            "exit_code": codes[i] if i < len(codes) else None,
            "stopped_by_kit": i in status.stopped_nodes,
        }
        for i, n in enumerate(status.nodes)
    ]
    return {
        "run_id": status.run_id,
        "job": status.job,
        "backend": status.backend,
        "record": record.path,
        "state": state,
        "note": note,
        "exit_code": code,
        "failure": _failure(status.failure),
        "attempts": attempts(status, state, code, now),
        "nodes": nodes,
        "hosts": list(dict.fromkeys(n.host for n in status.nodes)),
        "job_id": status.scheduler_job_id,
        "straggler": _straggler(status.straggler),
        "times": {
            "created_at": status.created_at,
            "submitted_at": status.submitted_at,
            "started_at": status.began,
            "finished_at": status.finished_at,
            "duration_s": _span(status.began, status.finished_at, code is None, now),
        },
    }


__all__ = ["describe", "attempts"]

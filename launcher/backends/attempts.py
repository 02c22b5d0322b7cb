"""The one restart loop. Attempt 1 runs the submitted plan; after a failure that is not the job's own verdict (a
signal, a lost host, a world that never formed, a hang: supervise/failure.restartable) the run starts again, up to
the job's `restarts`, each attempt a plan the planner builds from the run's inputs (planning/attempt.py: a fresh
port, spares for lost hosts), delivered by the backend (its execute_again: checks then start, or a SLURM requeue).
Every way a run is started (kit submit, a detached supervisor, a sweep's trial, the API) goes through here.
Each attempt the backend followed ends in a Result, the backend contract's return (backends/base.py)."""

import logging
import time
from dataclasses import dataclass
from typing import Callable, Optional

from launcher.errors import KitError
from launcher.planning.attempt import Attempt
from launcher.planning.model import LaunchPlan
from launcher.records import RunRecord
from launcher.states import OVER, AttemptEnd, RestartPath, State
from launcher.status import LOST, Failure
from launcher.supervise.failure import cause, restartable

log = logging.getLogger(__name__)


# How a run the backend followed ended.


@dataclass(frozen=True)
class Result:
    """kit's exit code, how the attempt kit followed ended (a run state that ends it, or still running), the first
    failure if any; where kit followed the nodes itself, when it saw the failure and when every node had ended
    (wall clock; the restart loop records them for kit report)."""

    code: int
    state: AttemptEnd
    failure: Optional[Failure] = None
    noticed_at: Optional[float] = None
    ended_at: Optional[float] = None

    def __post_init__(self):
        object.__setattr__(self, "state", AttemptEnd(self.state))


Replan = Callable[[Attempt], LaunchPlan]


def run_attempts(
    backend, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None, replan: Optional[Replan] = None
):
    """The run's Result: its last attempt's (or the last one that ran, when a restart could not start).

    An attempt's end is the run's verdict only once no restart follows it: while the backend may still be followed
    by a restart, it ends its attempt into the record (RunRecord.end_attempt), which holds that end for this loop.
    The loop then writes it either as an ended attempt (the run starting again, with no exit code, failure or end
    time of its own) or, when no restart follows, as the run's verdict: a reader never sees the run over between."""
    record.restart_may_follow = lambda fields: (
        restartable(fields.get("state"), fields.get("failure"))
        and len(record.read_status().attempts) + 1 <= plan.limits.restarts
    )
    try:
        return _attempts(backend, plan, record, base_dir, console, replan)
    finally:
        record.restart_may_follow = None
        held = record.take_held()
        if held:  # no restart followed: the last attempt's end is the run's
            record.update_status(**held)


def _attempts(backend, plan: LaunchPlan, record: RunRecord, base_dir: str, console, replan):
    started = time.time()
    result = backend.execute(plan, record, base_dir, console)
    current, lost, restarted = plan, [], 0
    while restartable(result.state, result.failure):
        # Attempts ended before this one: kit's restarts and a SLURM job's own requeues, one budget.
        earlier = len(record.read_status().attempts)
        if earlier + 1 > plan.limits.restarts:
            if earlier > restarted:
                log.warning(
                    f"kit: run {plan.run_id} not started again: its {plan.limits.restarts} restart(s) are "
                    f"spent, the scheduler's own requeues among them"
                )
            break
        refused = backend.restart_refused(record) or ("" if replan else "kit cannot plan it again here")
        if refused:
            log.warning(f"kit: run {plan.run_id} not started again: {refused}")
            break
        why = cause(result.failure)
        if result.failure.meaning == LOST and result.failure.host not in lost:
            lost.append(result.failure.host)
        # Its end as the backend recorded it; else (a `kit status` wrote a SLURM job's end first) as it returned.
        held = record.take_held() or {
            "state": result.state,
            "exit_code": result.code,
            "failure": result.failure,
            "finished_at": time.time(),
        }
        number, restarted = _keep(record, current, started, result, why, held) + 1, restarted + 1
        log.warning(f"kit: run {plan.run_id} attempt {number}/{plan.limits.restarts + 1} after: {why}")
        assert replan is not None  # without it the restart was refused above
        try:
            nxt = replan(Attempt(number, tuple(lost)))
            started = time.time()
            result, current = backend.execute_again(nxt, record, base_dir, console), nxt
        except KitError as e:
            _unkeep(record, number - 1, held)
            log.warning(f"kit: run {plan.run_id} not started again: {e}")
            break
        except KeyboardInterrupt:  # in its checks: attempt `number` never started, the last one's verdict holds
            _unkeep(record, number - 1, held)
            log.warning(
                f"\nkit: interrupted before attempt {number} started; nothing of it was started, "
                f"attempt {number - 1} ended {result.state}: {why}"
            )
            return Result(130, result.state, result.failure)
    return result


def _keep(record: RunRecord, plan: LaunchPlan, started: float, result: Result, why: str, held: dict) -> int:
    """The ended attempt in the record's list of attempts (`kit status` lists them), and the run starting again,
    in one write (a verdict another reader wrote meanwhile is reopened); how many attempts have ended. `held`: the
    attempt's end (state, exit code, failure, end time, ...). A SLURM
    job the queue requeued by itself (preemption, the time-limit warning) ended attempts of its own, which its
    follower listed: they count against the same `restarts` budget."""
    ended = {
        "attempt": 0,
        "started_at": started,
        "finished_at": held.get("finished_at") or time.time(),
        "state": result.state,
        "exit_code": result.code,
        "cause": why,
        "master_port": plan.world.master_port,
        # whose failure it was (host health: insight/health.py)
        "host": result.failure.host if result.failure else None,
        "meaning": result.failure.meaning if result.failure else None,
        # the restart's moments kit saw (None where the backend does not follow the nodes itself, SLURM), and
        # how the world starts again: every node stopped, every process started anew (insight/restarts.py)
        "noticed_at": result.noticed_at,
        "nodes_ended_at": result.ended_at,
        "restart": RestartPath.FULL.value,
    }
    status = record.amend(
        lambda current: {
            "state": State.STARTING.value,
            "attempts": [*current.attempts, {**ended, "attempt": len(current.attempts) + 1}],
        },
        reopen=True,
    )
    return len(status.attempts)


def _unkeep(record: RunRecord, ended: int, held: dict) -> None:
    """Attempt `ended + 1` never started: attempt `ended` is the run's last, its end the run's verdict (`held`),
    described by the record itself, not listed as an earlier attempt too. Once the next attempt has started (and
    written its own end), the entry stays."""

    def change(cur):
        if cur.state in OVER or not (cur.attempts and cur.attempts[-1].get("attempt") == ended):
            return {}
        return {**held, "attempts": list(cur.attempts)[:-1]}

    record.amend(change)


__all__ = ["run_attempts", "Replan"]

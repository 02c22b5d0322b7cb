"""Attempts the queue ended by itself. A SLURM job requeued without kit (preemption, `scontrol requeue`, the batch
shell's own requeue at the time-limit warning) starts a new attempt that kit's restart loop never saw: the follower
lists each ended one among the run's attempts, so `kit status` shows it and it counts against the job's `restarts`
budget like kit's own restarts (backends/attempts.py)."""

from typing import Optional

from launcher.backends.slurm.files import ATTEMPT_STARTED, this_attempts_output
from launcher.status import RunStatus
from launcher.states import RunState

TIME_LIMIT_REQUEUE = "kit: time limit near: requeueing"  # render/slurm.py's trap says it; a test keeps them one
BY_TIME_LIMIT = "time limit near: the batch shell requeued the job"
BY_QUEUE = "requeued by SLURM (preemption or scontrol requeue)"


def _output_of(batch_text: str, attempt: int) -> Optional[str]:
    """What the batch shell wrote in attempt `attempt` (1-based), up to the next attempt's first words."""
    text = this_attempts_output(batch_text, attempt - 1)
    if text is None:
        return None
    end = text.find(ATTEMPT_STARTED.format(n=attempt + 1))
    return text if end < 0 else text[:end]


def requeued_attempts(current: RunStatus, restarts: int, batch_text: str, now: float) -> dict:
    """The fields that list the attempts ended by requeues the record does not hold yet ({} when it holds them
    all: kit's own restarts are listed by its loop before it requeues)."""
    attempts = list(current.attempts)
    while len(attempts) < restarts:
        n = len(attempts) + 1
        said = _output_of(batch_text, n) or ""
        started = attempts[-1].get("finished_at") if attempts else current.started_at
        attempts.append(
            {
                "attempt": n,
                "started_at": started,
                "finished_at": now,
                "state": RunState.REQUEUED,
                "exit_code": None,
                "cause": BY_TIME_LIMIT if TIME_LIMIT_REQUEUE in said else BY_QUEUE,
            }
        )
    return {"attempts": attempts} if len(attempts) > len(current.attempts) else {}


__all__ = ["requeued_attempts", "BY_QUEUE", "BY_TIME_LIMIT"]

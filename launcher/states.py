"""A run's states and the transitions between them: one table every writer of a record goes through
(records.RunRecord.update_status applies it under the record's lock).

Not over: starting and running (kit or the nodes run), pending and requeued (a scheduler's job waits). Over: a
verdict (succeeded, failed, cancelled, timeout, preempted) or lost (the supervisor died before recording one).
A verdict is never replaced by a writer that disagrees (a `kit status` that read the queue a moment too early, a
cancel that came after the end): only a restart reopens an ended run, and it says so (`reopen`)."""

from enum import Enum


class State(str, Enum):
    STARTING = "starting"
    RUNNING = "running"
    PENDING = "pending"
    REQUEUED = "requeued"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    PREEMPTED = "preempted"
    LOST = "lost"


ACTIVE = (State.STARTING.value, State.RUNNING.value)
QUEUED = (State.PENDING.value, State.REQUEUED.value)
NOT_OVER = ACTIVE + QUEUED
FINAL = tuple(s.value for s in (State.SUCCEEDED, State.FAILED, State.CANCELLED, State.TIMEOUT, State.PREEMPTED))
OVER = FINAL + (State.LOST.value,)

# state -> the states a writer may move it to. Moving to the same state is always allowed (more fields).
TRANSITIONS = {
    State.STARTING: {State.RUNNING, State.PENDING, *map(State, OVER)},
    State.PENDING: {State.RUNNING, State.REQUEUED, *map(State, OVER)},
    State.REQUEUED: {State.PENDING, State.RUNNING, *map(State, OVER)},
    State.RUNNING: {State.REQUEUED, State.PENDING, *map(State, OVER)},
    # A run found lost is found so again; a supervisor that was only slow (its record says lost) still ends it.
    State.LOST: set(map(State, FINAL)),
    **{State(s): set() for s in FINAL},
}
# What a restart (the job's `restarts`, a SLURM requeue) may do to an ended run.
REOPEN = {State.STARTING, State.REQUEUED}


class BadTransition(ValueError):
    """A writer asked for a state kit does not have (a bug, not a user's mistake)."""


def allowed(current: str, new: str, reopen: bool = False) -> bool:
    """Whether a record in `current` may be moved to `new`. `current` may be anything read back ("?" for a record
    being created, or a state an older kit wrote): only the states of the table constrain."""
    try:
        target = State(new)
    except ValueError:
        raise BadTransition(f"{new!r} is not a run state ({', '.join(s.value for s in State)})") from None
    if current == new:
        return True
    try:
        source = State(current)
    except ValueError:
        return True
    if reopen:   # a restart: from an ended run, or from the attempt that just ended
        return target in REOPEN
    return target in TRANSITIONS[source]


__all__ = ["State", "ACTIVE", "QUEUED", "NOT_OVER", "FINAL", "OVER", "TRANSITIONS", "allowed", "BadTransition"]

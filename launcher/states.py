"""kit's states, one vocabulary: a run's (status.json's `state`), an attempt's end (what a backend's following of
one attempt gives the restart loop), a failure's meaning, and every transition of a run in one table
(records.RunRecord.update_status applies it under the record's lock). No other module spells a state: each
backend maps its scheduler's words through one table of its own (SLURM: backends/slurm/queue.SLURM_STATES).

A run is not over while starting or running (kit or the nodes run) or pending and requeued (a scheduler's job
waits). It is over with a verdict (succeeded, failed, cancelled, timeout, preempted) or lost (its supervisor died
before recording one). A verdict is never replaced by a writer that disagrees (a `kit status` that read the queue a
moment too early, a cancel that came after the end): only a restart reopens an ended run, and it says so (`reopen`).
An attempt's end is the run's verdict only once no restart follows it (backends/attempts.py).

Every state is a `str` whose value is the word status.json holds: records written by an older kit read the same."""

from enum import Enum
from typing import Union


class Word(str, Enum):
    """A state that is its word: equal to, printed as and serialized as the string the record holds."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class RunState(Word):
    STARTING = "starting"
    RUNNING = "running"
    PENDING = "pending"
    REQUEUED = "requeued"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    PREEMPTED = "preempted"
    # A sweep trial stopped early because its intermediate values were poor (sweep.early_stopping): a verdict of
    # its own, not a failure. It is stopped as `kit cancel` stops a run, then recorded pruned (CANCELLED -> PRUNED).
    PRUNED = "pruned"
    # Over without a verdict: the kit process that followed the run (its supervisor, a sweep's driver) died
    # before recording one. Not a host that stopped answering: that is a failure's meaning (Meaning.HOST_LOST).
    LOST = "lost"
    # Not states of a run but of its record: none yet or a state this kit does not have ("?"), unreadable.
    UNKNOWN = "?"
    CORRUPT = "corrupt"

    @property
    def is_terminal(self) -> bool:
        """The run is over: a verdict, or lost."""
        return self in _OVER

    @property
    def is_active(self) -> bool:
        return self in (RunState.STARTING, RunState.RUNNING)

    @property
    def is_queued(self) -> bool:
        return self in (RunState.PENDING, RunState.REQUEUED)

    @classmethod
    def read(cls, word) -> "RunState":
        """The state a record holds; UNKNOWN for one this kit does not have (a newer kit's, or none)."""
        try:
            return cls(word)
        except ValueError:
            return cls.UNKNOWN


class AttemptEnd(Word):
    """How kit's following of one attempt ended (backends/attempts.Result.state): the run's states that end it, and
    STILL_RUNNING: kit stopped following (Ctrl-C) while the scheduler keeps the job going."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    PREEMPTED = "preempted"
    LOST = "lost"
    STILL_RUNNING = "still running"

    @property
    def is_terminal(self) -> bool:
        return self is not AttemptEnd.STILL_RUNNING


class Meaning(Word):
    """Why a node failed when it is not the node's own verdict (status.Failure.meaning; a rank's own exit code has
    its own words, supervise/failure.py)."""

    HOST_LOST = "lost"  # the node's host stopped answering
    NEVER_JOINED = "never joined"  # the world did not form in time (supervise/world.py)
    HUNG = "hung"  # no rank made progress for timeouts.hang (supervise/hang.py)
    NOT_STARTED = "never started"  # the scheduler ended the job before any node's command ran


class RestartPath(Word):
    """How a restart started the world again (the record's attempts list, `restart`; kit report names it): FULL,
    every node stopped and every process started anew, is the only path today; WARM is kept for a path that keeps
    processes, imports or state across the restart."""

    FULL = "full"
    WARM = "warm"


class TrialState(Word):
    """A sweep trial's or a sweep's state beside the run states it shares (sweeps/)."""

    NOT_RUN = "not run"  # a trial not launched yet
    ARRAY = "array"  # a sweep submitted as one job array: its state is its tasks'


State = RunState  # the name older code imports

ACTIVE = (RunState.STARTING, RunState.RUNNING)
QUEUED = (RunState.PENDING, RunState.REQUEUED)
NOT_OVER = ACTIVE + QUEUED
FINAL = (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.TIMEOUT, RunState.PREEMPTED, RunState.PRUNED)
OVER = FINAL + (RunState.LOST,)
_OVER = frozenset(OVER)

# state -> the states a writer may move it to. Moving to the same state is always allowed (more fields).
TRANSITIONS = {
    RunState.STARTING: {RunState.RUNNING, RunState.PENDING, *OVER},
    RunState.PENDING: {RunState.RUNNING, RunState.REQUEUED, *OVER},
    RunState.REQUEUED: {RunState.PENDING, RunState.RUNNING, *OVER},
    RunState.RUNNING: {RunState.REQUEUED, RunState.PENDING, *OVER},
    # A run found lost is found so again; a supervisor that was only slow (its record says lost) still ends it.
    RunState.LOST: set(FINAL),
    **{s: set() for s in FINAL},
    # The sweep driver stopped a trial its pruner picked as a cancel does, then records the cancelled run pruned.
    RunState.CANCELLED: {RunState.PRUNED},
}
# What a restart (the job's `restarts`, a SLURM requeue) may do to an ended run, or to the attempt that just ended.
REOPEN = {RunState.STARTING, RunState.REQUEUED}


class BadTransition(ValueError):
    """A writer asked for a state kit does not have (a bug, not a user's mistake)."""


def allowed(current: Union[str, RunState], new: Union[str, RunState], reopen: bool = False) -> bool:
    """Whether a record in `current` may be moved to `new`. `current` may be anything read back ("?" for a record
    being created, or a state an older kit wrote): only the states of the table constrain."""
    try:
        target = RunState(new)
    except ValueError:
        raise BadTransition(f"{new!r} is not a run state ({', '.join(s.value for s in RunState)})") from None
    if current == new:
        return True
    source = RunState.read(current)
    if reopen:  # a restart: from an ended run, or from the attempt that just ended
        return target in REOPEN
    if source not in TRANSITIONS:
        return True
    return target in TRANSITIONS[source]


__all__ = [
    "Word",
    "RunState",
    "AttemptEnd",
    "Meaning",
    "RestartPath",
    "TrialState",
    "State",
    "ACTIVE",
    "QUEUED",
    "NOT_OVER",
    "FINAL",
    "OVER",
    "TRANSITIONS",
    "REOPEN",
    "allowed",
    "BadTransition",
]

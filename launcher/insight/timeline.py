"""The record's timeline: what kit sees happen to a run besides its attempts' starts and ends (status.json keeps
those): the world formed, a SLURM job's queue states. One entry per event, appended under the record's lock."""

import time
from typing import Optional
from launcher.states import RunState

WORLD_FORMED = "world formed"
QUEUED = (RunState.PENDING, RunState.REQUEUED)


def mark(record, event: str, attempt: Optional[int] = None, detail: str = "", at: Optional[float] = None) -> None:
    """Best effort: a record that cannot be written costs the entry, never the run."""
    entry = {"at": time.time() if at is None else at, "event": event, "attempt": attempt, "detail": detail}
    try:
        record.update_status(append={"timeline": [entry]})
    except Exception:
        pass


__all__ = ["mark", "WORLD_FORMED", "QUEUED"]

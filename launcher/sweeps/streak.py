"""When a sweep stops launching trials: `sweep.max_failures` trials in a row (in the order they end) that failed
the same way. The same way: the same exit code, meaning and last words of the first failing rank, wherever it ran
(a rank, host or node number differs between trials that fail alike); a trial that never started, the same error
line. A success, or another cause, starts the count again."""

from typing import Optional
from launcher.states import RunState


def failure_key(status, last_line: str, run_id: str) -> str:
    """What two trials that failed alike share: their failure without where it happened, else kit's last line with
    the trial's own run id left out."""
    f = status.failure
    if f is not None:
        return f"{f.meaning}|{f.code}|{f.last_line}"
    return (last_line or f"exit code {status.exit_code}").replace(run_id, "<trial>")


class Streak:
    def __init__(self, limit: Optional[int]):
        self.limit, self.count = limit, 0
        self.key: Optional[str] = None  # the cause of the failures in a row

    def ended(self, state: str, key: str) -> bool:
        """Count one trial's end; True when this one makes `limit` failures in a row with one cause."""
        if state in (RunState.SUCCEEDED, RunState.CANCELLED, RunState.PRUNED):
            self.key, self.count = None, 0
            return False
        self.count = self.count + 1 if key == self.key else 1
        self.key = key
        return self.limit is not None and self.count >= self.limit

"""A run's end: cancelling a run (`kit cancel RUN`, the API's Run.cancel, asked of its own backend, which returns once
no process of the run is left), its end as an exit code, and waiting for that end: `kit wait / status / logs
--follow` and the Python API's Run.wait share these, for runs of every backend (the state is asked of the run's
backend, as `kit status` asks)."""

import math
import os
import threading
import time
from typing import Optional

from launcher.backends import registry
from launcher.core.lookup import UNTRUSTED, state_now
from launcher.records import RunRecord
from launcher.states import RunState
from launcher.status import NOT_OVER, RunStatus

# Cancelling one run, for both faces (`kit cancel RUN`, the API's Run.cancel): asked of its own backend, which stops
# every process of the run wherever it is and returns once none is left.


def cancel_run(record: RunRecord) -> str:
    """The line to print: what the backend did, or that the run had ended already (nothing is stopped then)."""
    status = record.read_status(strict=True)
    run_id = status.run_id or os.path.basename(record.path)
    backend = registry.backend(status.backend)
    state, _ = backend.current_state(record, status)
    if state not in NOT_OVER + (RunState.LOST,):
        code = status.exit_code
        ended = state if code is None else f"{state}, exit code {code}"
        return f"run {run_id}: already finished ({ended}); nothing to cancel"
    return backend.cancel(record, status)


LOST_CODE = 255  # a run whose end nobody recorded (its supervisor died): ssh's code for a lost connection
TIMEOUT_CODE = 254  # `kit wait --timeout S` ran out with the run still going (the run is left alone)
# An end recorded without a code (older records, a cancel that found no supervisor): what the end means.
_WITHOUT_CODE: dict[str, int] = {RunState.CANCELLED: 143, RunState.PREEMPTED: 75, RunState.LOST: LOST_CODE}

POLL_FIRST = 0.2  # seconds between the first polls: a short run is seen ending at once
POLL_MAX = 2.0  # ... growing to this: a SLURM poll is one scontrol, a local one reads a file


def end_code(state: str, status: RunStatus) -> Optional[int]:
    """The exit code of a run that ended in `state` (the rank's own code, a signal N as 128+N, as recorded);
    None while it is not over."""
    if state == UNTRUSTED:  # a record kit will not act on: what it says is all there is
        state = status.state
    if state in NOT_OVER:
        return None
    if state == RunState.SUCCEEDED:
        return status.exit_code or 0
    return status.exit_code or _WITHOUT_CODE.get(state, 1)


def status_code(state: str, status: RunStatus) -> int:
    """`kit status`'s exit code: 0 for a run that succeeded or is not over yet, else its exit code."""
    return end_code(state, status) or 0


class StillGoing(TimeoutError):
    """The wait's time ran out; `state` is the run's state at the last poll."""

    def __init__(self, state: str, timeout: float):
        super().__init__(f"still {state} after {timeout:g} s")
        self.state = state


def wait_end(record: RunRecord, timeout: Optional[float] = None, poll: float = POLL_MAX) -> tuple[str, str]:
    """Poll the run's state until it is over: (state, note). StillGoing after `timeout` seconds, also when its
    backend is slow to answer (each poll is bounded by the time left). Polls come every POLL_FIRST seconds at
    first, then less often, at most every `poll` seconds."""
    if timeout is not None and math.isinf(timeout) and timeout > 0:
        timeout = None  # waits for ever (thread.join and time.sleep overflow on an infinite wait)
    deadline = None if timeout is None else time.monotonic() + timeout
    interval, state = POLL_FIRST, "?"
    while True:
        recorded = record.read_status()
        if recorded.over:  # ended, as recorded: nothing to ask
            return recorded.state, recorded.note
        answer = _ask(record, _left(deadline))
        if answer is not None:
            state, note = answer
            if state not in NOT_OVER:
                return state, note
        left = _left(deadline)
        if left is not None and left <= 0:
            assert timeout is not None  # a deadline is set from a timeout
            raise StillGoing(state, timeout)
        time.sleep(interval if left is None else min(interval, left))
        interval = min(interval * 1.5, poll)


def _left(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _ask(record: RunRecord, within: Optional[float]):
    """state_now(record), or None when it does not answer `within` seconds (it goes on in its daemon thread, and
    its answer is dropped). An error it raises is raised here."""
    box = {}

    def ask():
        try:
            box["answer"] = state_now(record)
        except BaseException as e:  # raised again in the waiting thread
            box["error"] = e

    thread = threading.Thread(target=ask, daemon=True, name="kit-wait-poll")
    thread.start()
    thread.join(within)
    if "error" in box:
        raise box["error"]
    return box.get("answer")


__all__ = ["LOST_CODE", "TIMEOUT_CODE", "StillGoing", "end_code", "status_code", "wait_end"]

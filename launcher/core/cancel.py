"""Cancelling one run, for both faces (`kit cancel RUN`, the API's Run.cancel): asked of its own backend, which
stops every process of the run wherever it is and returns once none is left."""

import os

from launcher.backends import registry
from launcher.records import RunRecord
from launcher.states import NOT_OVER, RunState


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

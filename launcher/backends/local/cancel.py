"""`kit cancel` of a local run: ask its supervisor, else its watchdogs, else stop whatever still carries the run's
id; return only when nothing of the run is left. And what a local record's state means now."""

import time

from launcher.records import RunRecord
from launcher.trust import require_trusted
from launcher.status import ACTIVE, RunStatus
from launcher.supervise import tree
from launcher.supervise.liveness import CANCEL_MARGIN, live_watchdogs, stop_supervisor, supervisor, wait_gone
from launcher.states import RunState


def current_state(status: RunStatus) -> tuple[str, str]:
    """(state, note). `lost`: the record says running but the kit process supervising it is gone."""
    state = status.state
    if state not in ACTIVE:
        return state, status.note
    if state == RunState.STARTING and not status.supervisor_pid:
        return state, ""
    if supervisor(status) is not None:
        return state, ""
    left = live_watchdogs(status)
    if left:
        return RunState.LOST, (
            f"its supervisor (kit, pid {status.supervisor_pid}) is gone; {len(left)} node(s) still stopping"
        )
    return RunState.LOST, (
        f"its supervisor (kit, pid {status.supervisor_pid}) died before recording the "
        "outcome; its nodes stopped themselves"
    )


def cancel_local_run(record: RunRecord, status: RunStatus) -> str:
    require_trusted(record)  # the pids it names are signalled: only a record of yours
    run_id = status.run_id or "?"
    grace = stop_supervisor(status)
    dogs = live_watchdogs(status)
    for dog in dogs:
        dog.terminate()  # a watchdog stops its node on SIGTERM, with the grace period
    wait_gone(dogs, grace + CANCEL_MARGIN)
    left = tree.run_processes(run_id)  # last resort: anything still carrying this run's id
    if left:
        tree.terminate(left, grace=grace)
    if record.read_status().state in ACTIVE:
        record.update_status(state=RunState.CANCELLED, finished_at=time.time())
    return f"run {run_id}: cancelled; no process of it is left"

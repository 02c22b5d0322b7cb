"""Running a sweep again continues it: trials that succeeded are skipped; any other trial's old record is set
aside as `<run id>.attempt<N>` (a run id is never reused in place), and the trial runs again."""

import logging
import os

from launcher import records
from launcher.errors import KitError
from launcher.core.lookup import state_now
from launcher.status import NOT_OVER, RunStatus
from launcher.states import RunState

log = logging.getLogger(__name__)


def trial_state(path: str) -> tuple[str, RunStatus]:
    """(state now, status) of the trial's record at `path`; ("", empty status) when it has none."""
    record = records.RunRecord(path)
    if not record.exists():
        return "", RunStatus()
    status = record.read_status()
    return state_now(record, status)[0], status


def set_aside(path: str) -> str:
    n = 1
    while os.path.exists(f"{path}.attempt{n}"):
        n += 1
    os.rename(path, f"{path}.attempt{n}")
    return f"{os.path.basename(path)}.attempt{n}"


def trials_to_run(plan, record_root: str) -> list:
    """The trials still to run, in order; lines (logged) tell what happened to earlier attempts."""
    todo, aside = [], []
    for trial in plan.trials:
        path = os.path.join(record_root, trial.run_id)
        state, _ = trial_state(path)
        if state in (RunState.SUCCEEDED, RunState.PRUNED):  # pruned: it ran as far as the sweep wanted
            log.info(f"kit: sweep {plan.sweep_id}: trial {trial.index} {state} before ({trial.run_id}); skipped")
            continue
        if state in NOT_OVER:  # running, or waiting in a queue (a SLURM job array): it would run twice
            raise KitError(
                f"trial {trial.run_id} is still {state}; wait for it or stop it with "
                f"`kit cancel {plan.sweep_id}` before running the sweep again"
            )
        if state:
            aside.append(path)
        todo.append(trial)
    for path in aside:  # only once nothing refused the re-run
        log.info(
            f"kit: sweep {plan.sweep_id}: {os.path.basename(path)} runs again; its earlier record is now "
            f"{set_aside(path)}"
        )
    return todo

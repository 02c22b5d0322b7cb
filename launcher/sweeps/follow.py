"""A sweep whose trials the backend submitted as one (a SLURM job array): follow every trial through its own
record, as `kit status <trial>` reads it (its backend's current_state brings the record up to date), until each
has ended; then the sweep's end and its table."""

import logging
import os
import sys
import time

from launcher import records
from launcher.core.lookup import state_now
from launcher.states import RunState
from launcher.status import NOT_OVER
from launcher.supervise.failure import outcome_level, outcome_line
from launcher.sweeps import metrics

log = logging.getLogger(__name__)

POLL = 2.0


def _trial_record(record, run_id: str) -> records.RunRecord:
    return records.RunRecord(record.trial_dir(run_id))


def _refresh(trial: records.RunRecord) -> tuple[str, str]:
    """(state, the backend's line) of one trial now; a finished one's end goes into its record."""
    status = trial.read_status()
    if not status.scheduler_job_id:
        # Never submitted (kit stopped before sbatch answered): nothing of it runs anywhere.
        return ("not submitted" if status.state in NOT_OVER else status.state), ""
    state, line = state_now(trial, status)
    if state == RunState.RUNNING and not status.started_at:
        # When it was first seen running: the trial's duration leaves out its wait in the queue.
        trial.update_status(started_at=time.time())
    return state, line


def how_to(sweep_id: str, record) -> str:
    root = os.path.dirname(record.path)
    return (
        f"Follow it with `kit sweep status {sweep_id} --run-root {root}` (one trial: `kit logs {sweep_id}-tN "
        f"--follow --run-root {root}`); stop it with `kit cancel {sweep_id} --run-root {root}`."
    )


def _stop_blind(record, problem: str) -> int:
    """The first trial that succeeded has no number at sweep.metric: the array (one job to SLURM) is cancelled
    as `kit cancel <sweep>` cancels it; the trials that succeeded are kept, and scored once the metric is fixed."""
    from launcher.backends import registry

    data = record.read()
    said = registry.backend(data.get("backend") or registry.DEFAULT).cancel_many(data, record.path)
    if said:
        log.info(said)
    line = (
        f"kit: sweep {record.sweep_id}: {problem}; its other trials were cancelled; fix sweep.metric and run "
        f"the same command again: the trials that succeeded are kept"
    )
    record.update(state=RunState.FAILED, exit_code=2, finished_at=time.time(), stopped=line.removeprefix("kit: "))
    log.error(line)
    return 2


def follow_trials(record, run_ids: list[str]) -> int:
    """Print each trial's state changes until every one has ended. Ctrl-C stops following only. The first trial
    that succeeds is checked for sweep.metric (_stop_blind)."""
    from launcher.sweeps.table import metric_problem

    said: dict[str, tuple[str, str]] = {}  # run id -> (state, line) last printed
    ended: list[str] = []
    scored, unread = False, 0
    try:
        while len(ended) < len(run_ids):
            for run_id in run_ids:
                if run_id in ended:
                    continue
                state, line = _refresh(_trial_record(record, run_id))
                if said.get(run_id) != (state, line):
                    said[run_id] = (state, line)
                    log.info(f"kit: {run_id}: {line or state}")
                if state not in NOT_OVER:
                    ended.append(run_id)
                if state == RunState.SUCCEEDED and not scored:
                    scored = True
                    if problem := metric_problem(record, os.path.dirname(record.path), run_id):
                        # Not found may be not there yet: cancelling the array wants it twice (driver.py).
                        unread += metrics.MISSING in problem
                        if metrics.MISSING not in problem or unread >= metrics.UNREAD_TRIALS:
                            return _stop_blind(record, problem)
                        scored = False
            if len(ended) < len(run_ids):
                time.sleep(POLL)
    except KeyboardInterrupt:
        log.warning(f"\nkit: stopped following; the job array keeps running. {how_to(record.sweep_id, record)}")
        return 130
    first_bad = None
    for run_id in ended:
        status = _trial_record(record, run_id).read_status()
        log.log(outcome_level(status.state), outcome_line(run_id, status.state, status.exit_code or 0, status.failure))
        if status.state != RunState.SUCCEEDED and first_bad is None:
            first_bad = status.exit_code or 1
    code = 0 if first_bad is None else first_bad
    record.update(state=RunState.SUCCEEDED if code == 0 else RunState.FAILED, exit_code=code, finished_at=time.time())
    from launcher.sweeps.table import print_status  # the same table as `kit sweep status`

    sys.stdout.flush()
    print_status(os.path.dirname(record.path), record.sweep_id)
    return code

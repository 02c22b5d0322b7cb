"""A sweep's SLURM job array after submission: follow every trial's array task, bring the trial records up to
date from SLURM, cancel the array. Each trial's state comes from the SLURM backend's own `current_state`, on
the job id `<array id>_<index>` its record holds, exactly as `kit status <trial>` reads it."""

import os
import subprocess
import sys
import time

from launcher import runs
from launcher.backends import get_backend
from launcher.commands.outcome import outcome_line
from launcher.errors import KitError
from launcher.supervise.liveness import NOT_OVER

POLL = 2.0
CANCEL_WAIT = 120.0


def _trial_ids(record) -> list[str]:
    return [t["run_id"] for t in record.read()["trials"]]


def _trial_record(record, run_id: str) -> runs.RunRecord:
    return runs.RunRecord(record.trial_dir(run_id))


def _refresh(backend, trial: runs.RunRecord) -> tuple[str, str]:
    """(state, SLURM's line) of one trial now; a finished task's end state and exit code go into its record."""
    status = trial.read_status()
    if not status.get("job_id"):
        # Never submitted (kit stopped before sbatch answered): nothing of it runs anywhere.
        state = status.get("state", "not started")
        return ("not submitted" if state in NOT_OVER else state), ""
    state, line = backend.current_state(status)
    if state == "running" and not status.get("started_at"):
        # When its array task was first seen running: the trial's duration leaves out its wait in the queue.
        trial.update_status(started_at=time.time())
    return state, line


def refresh_trials(record) -> dict[str, str]:
    """Every trial's state from SLURM, written into its record (so `kit sweep status` is right after the array
    ended, followed or not): run id -> state, "not started" for a trial without a record."""
    backend = get_backend("slurm")
    states = {}
    for run_id in _trial_ids(record):
        trial = _trial_record(record, run_id)
        states[run_id] = _refresh(backend, trial)[0] if os.path.isdir(trial.path) else "not started"
    return states


def how_to(sweep_id: str, record) -> str:
    root = os.path.dirname(record.path)
    return (f"Follow it with `kit sweep status {sweep_id} --run-root {root}` (one trial: `kit logs {sweep_id}-tN "
            f"--follow --run-root {root}`); stop it with `kit cancel {sweep_id} --run-root {root}`.")


def _outcome(run_id: str, status: dict) -> str:
    from launcher.backends.slurm_outcome import failure_of
    return outcome_line(run_id, status.get("state", "?"), status.get("exit_code") or 0, failure_of(status))


def follow_array(record, run_ids: list[str]) -> int:
    """Print each trial's state changes until every array task has ended. Ctrl-C stops following only."""
    backend = get_backend("slurm")
    said, ended = {}, []
    try:
        while len(ended) < len(run_ids):
            for run_id in run_ids:
                if run_id in ended:
                    continue
                state, line = _refresh(backend, _trial_record(record, run_id))
                if said.get(run_id) != (state, line):
                    said[run_id] = (state, line)
                    print(f"kit: {run_id}: {line or state}", file=sys.stderr, flush=True)
                if state not in NOT_OVER:
                    ended.append(run_id)
            if len(ended) < len(run_ids):
                time.sleep(POLL)
    except KeyboardInterrupt:
        print(f"\nkit: stopped following; the job array keeps running. {how_to(record.sweep_id, record)}",
              file=sys.stderr, flush=True)
        return 130
    first_bad = None
    for run_id in ended:
        status = _trial_record(record, run_id).read_status()
        print(_outcome(run_id, status), file=sys.stderr)
        if status.get("state") != "succeeded" and first_bad is None:
            first_bad = status.get("exit_code") or 1
    code = 0 if first_bad is None else first_bad
    record.update(state="succeeded" if code == 0 else "failed", exit_code=code, finished_at=time.time())
    from launcher.sweep.status import print_status  # the same table as `kit sweep status`
    sys.stdout.flush()
    print_status(os.path.dirname(record.path), record.sweep_id)
    return code


def cancel_array(record) -> str:
    """scancel of the sweep's array job (every task, running or still waiting), through submitit's job handle,
    then wait until SLURM reports every task ended and write that into the trials' records."""
    from submitit.slurm.slurm import SlurmJob  # lazily: keeps the CLI's import path light
    array_id = record.read().get("array_job_id")
    if not array_id:
        raise KitError(f"sweep {record.sweep_id}: no SLURM job array was submitted for it; nothing to cancel")
    try:
        SlurmJob(record.path, str(array_id)).cancel(check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise KitError(f"scancel {array_id} failed: {e}") from None
    deadline = time.monotonic() + CANCEL_WAIT
    states = refresh_trials(record)
    while any(s in NOT_OVER for s in states.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
        states = refresh_trials(record)
    left = sorted(r for r, s in states.items() if s in NOT_OVER)
    record.update(state="cancelled", finished_at=time.time())
    if left:
        return (f"kit: sweep {record.sweep_id}: scancel sent to SLURM job array {array_id}; still ending: "
                f"{', '.join(left)}")
    counts = {}
    for s in states.values():
        counts[s] = counts.get(s, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    return f"kit: sweep {record.sweep_id} cancelled (SLURM job array {array_id} ended: {summary})"

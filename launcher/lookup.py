"""Finding runs and what their records mean now, for `kit runs / status / logs / cancel` and the Python API: a
record's state is read through its own backend (a dead supervisor reads "lost", a SLURM job is asked about)."""

from typing import Optional

from launcher import records
from launcher.backends import registry
from launcher.errors import KitError
from launcher.status import RunStatus


def state_now(record: records.RunRecord, status: Optional[RunStatus] = None) -> tuple[str, str]:
    """(state, note) of a record now, through its backend (which may bring the record up to date: only this
    record, wherever it is now); the recorded state when the backend cannot say."""
    status = record.read_status() if status is None else status
    if status.state == "corrupt":
        return "corrupt", status.note
    try:
        return registry.backend(status.backend).current_state(record, status)
    except KitError as e:
        return status.state, str(e)


def find_record(run_root: str, run_id: Optional[str]) -> records.RunRecord:
    """The record of `run_id` (the latest run when None) under `run_root`; a one-line KitError when none."""
    run_id = run_id or records.latest(run_root)
    if run_id is None:
        raise KitError(f"no runs under {run_root}/ yet; start one with `kit submit`")
    return records.find(run_root, run_id)

"""Finding runs (by id, or by the unique beginning of one) and what their records mean now, for `kit runs / status
/ logs / cancel / wait` and the Python API: a record's state is read through its own backend (a dead supervisor
reads "lost", a SLURM job is asked about)."""

import os
import time
from typing import Optional

from launcher import records, run_index
from launcher.backends import registry
from launcher.errors import KitError
from launcher.states import NOT_OVER, RunState, State
from launcher.status import RunStatus
from launcher.trust import untrusted


def state_now(record: records.RunRecord, status: Optional[RunStatus] = None) -> tuple[str, str]:
    """(state, note) of a record now, through its backend (which may bring the record up to date: only this
    record, wherever it is now); the recorded state when the backend cannot say."""
    status = record.read_status() if status is None else status
    if status.state == RunState.CORRUPT:
        return RunState.CORRUPT, status.note
    why = untrusted(record)
    if why is not None:  # read, never acted on: no login, no copy, no signal, nothing written back
        return UNTRUSTED, f"not checked: {why} (--trust-owner USER to act on it)"
    try:
        state, note = registry.backend(status.backend).current_state(record, status)
    except KitError as e:
        return status.state, str(e)
    if state == State.LOST and status.state in NOT_OVER:
        # Written back: a run found lost stays lost, and no later listing asks its hosts again.
        try:
            record.update_status(state=State.LOST.value, note=note, finished_at=time.time())
        except (OSError, KitError):
            pass
    return state, note


DEFAULT_ROOT = "runs"
UNTRUSTED = "untrusted"  # how a listing shows a record kit will not act on (trust.untrusted)


def all_roots() -> list[str]:
    """Where this user's records are: ./runs and every run root in kit's index, each once."""
    roots: dict[str, str] = {}
    for root in [DEFAULT_ROOT, *run_index.run_roots()]:
        if os.path.isdir(root):
            roots.setdefault(os.path.realpath(root), root)
    return list(roots.values())


def root_of(run_root: Optional[str], run_id: Optional[str]) -> str:
    """The run root to look in for `run_id`: the one given (--run-root), else ./runs when it holds that run, else
    where kit's index says the record is (run ids may repeat across directories: the same sweep submitted from
    two checkouts has one id), else ./runs."""
    if run_root is not None:
        return run_root
    if run_id and os.path.isdir(os.path.join(DEFAULT_ROOT, run_id)):
        return DEFAULT_ROOT  # a run of this directory's wins over another of the same id elsewhere
    found = run_index.where(run_id) if run_id else None
    return os.path.dirname(found) if found else DEFAULT_ROOT


SHOWN_CANDIDATES = 4


def _recorded(root: str, name: str) -> bool:
    """Does `root/name` hold a run's record or a sweep's?"""
    return any(os.path.isfile(os.path.join(root, name, f)) for f in (records.STATUS, records.SWEEP_FILE))


def _starting(run_root: Optional[str], prefix: str) -> list[str]:
    """The run and sweep ids beginning with `prefix`: under `run_root`, else in kit's index and under ./runs."""
    roots = [run_root] if run_root is not None else [DEFAULT_ROOT]
    found = set() if run_root is not None else set(run_index.starting(prefix))
    for root in roots:
        names = os.listdir(root) if os.path.isdir(root) else []
        found.update(n for n in names if n.startswith(prefix) and _recorded(root, n))
    return sorted(found)


def resolve_id(run_root: Optional[str], run_id: Optional[str]) -> Optional[str]:
    """The run (or sweep) id that `run_id` names: itself when a record of that id exists, else the one id it is
    the beginning of. Several: a one-line KitError (exit 2) naming a few. None: None (the latest run)."""
    if not run_id or _recorded(root_of(run_root, run_id), run_id):
        return run_id
    found = _starting(run_root, run_id)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        shown = ", ".join(found[:SHOWN_CANDIDATES])
        more = f" and {len(found) - SHOWN_CANDIDATES} more" if len(found) > SHOWN_CANDIDATES else ""
        raise KitError(f"run id {run_id} is ambiguous: it begins {len(found)} runs ({shown}{more}); type more of it")
    return run_id  # none: the caller's own error says there is no such run

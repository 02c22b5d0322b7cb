"""The sweep record: <run root>/<sweep id>/sweep.json lists the trials and their parameters. Each trial is an
ordinary run with its own record (<run root>/<sweep id>-t<N>/), which holds the trial's state."""

import logging
import json
import os
import time
from dataclasses import dataclass
from typing import Optional

from launcher import run_index
from launcher.core.listing import entry_under_lock
from launcher.core.lookup import DEFAULT_ROOT, all_roots
from launcher.errors import KitError, Option, RecordError
from launcher.filestore import locked, write_atomic
from launcher.records import LOCK, SWEEP_FILE, own_run_dir, refuse_planted, signature
from launcher.spec.sweep import NOT_IDENTITY
from launcher.sweeps.sweep_file import checked
from launcher.render.text import to_json
from launcher.states import RunState, TrialState

log = logging.getLogger(__name__)


@dataclass
class SweepRecord:
    path: str  # absolute directory of the sweep record

    @property
    def sweep_id(self) -> str:
        return os.path.basename(self.path)

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def read(self) -> dict:
        """sweep.json, every known field type-checked (sweep_file.py); a one-line KitError naming the file and
        the field when it is not what kit writes (BadSweep is a ValueError)."""
        try:
            with open(self.file(SWEEP_FILE), encoding="utf-8") as f:
                return checked(json.load(f))
        except (OSError, ValueError) as e:
            raise RecordError(
                f"sweep record {self.path}: {SWEEP_FILE} is unreadable ({e}); inspect or remove that directory",
                path=self.path,
            ) from None

    def update(self, **fields) -> dict:
        """Read, change, write back, under the record's lock (the driver, a cancel and a status may all write)."""
        from launcher import run_index

        with locked(self.file(LOCK)):
            data = {**self.read(), **fields}
            write_atomic(self.file(SWEEP_FILE), to_json(data))
            if run_index.indexed(self.path):  # the index's entry follows every write (run_index.py)
                run_index.note(self.index_entry(data, os.stat(self.file(SWEEP_FILE))))
        return data

    def index_entry(self, data: dict, st: os.stat_result) -> dict:
        """What `kit runs` shows of this sweep (run_index.py), `st` being its sweep.json's stat."""
        created = data.get("created_at")
        return {
            "path": os.path.abspath(self.path),
            "id": self.sweep_id,
            "kind": "sweep",
            "job": "",
            "backend": "sweep",
            "state": str(data.get("state") or (TrialState.ARRAY if data.get("array_job_id") else "?")),
            "exit": data.get("exit_code"),
            "created": created or 0,
            "began": created,
            "finished": data.get("finished_at"),
            "job_id": data.get("array_job_id"),
            "owner": st.st_uid,
            "sig": signature(st),
        }

    def set_trial(self, index: int, **fields) -> None:
        """Change one trial's entry (what the sweep learnt as it went: its study trial, the values chosen)."""
        with locked(self.file(LOCK)):
            data = self.read()
            data["trials"] = [{**t, **fields} if t["index"] == index else t for t in data["trials"]]
            write_atomic(self.file(SWEEP_FILE), to_json(data))
            if run_index.indexed(self.path):
                run_index.note(self.index_entry(data, os.stat(self.file(SWEEP_FILE))))

    def trial_dir(self, run_id: str) -> str:
        """Trials' records sit next to the sweep's, under the same run root."""
        return os.path.join(os.path.dirname(self.path), run_id)


def open_sweep(root: str, plan) -> SweepRecord:
    """Create the sweep record, or take up an existing one of the same sweep (a re-run continues it)."""
    record = SweepRecord(os.path.abspath(os.path.join(root, plan.sweep_id)))
    refuse_planted([record.path], plan.sweep_id, directory=True)  # a link or a stranger's directory: never used
    refuse_planted([record.file(SWEEP_FILE), record.file(LOCK)], plan.sweep_id)
    _refuse_a_namesake(plan.sweep_id, record.path)
    data = plan.to_dict()
    if os.path.exists(record.file(SWEEP_FILE)):
        old = record.read()
        if _planned(old.get("trials"), data["trials"]) != data["trials"] or _what_runs(old.get("spec")) != _what_runs(
            data["spec"]
        ):
            raise KitError(
                f"sweep {plan.sweep_id} already exists at {record.path} with other trials; pick another ",
                Option("run_id"),
            )
        record.update(**{**data, "trials": _kept(old["trials"], data["trials"])})
        run_index.remember(record.path, entry=lambda: entry_under_lock(record.path))
        return record
    own_run_dir(record.path, plan.sweep_id)
    write_atomic(record.file(SWEEP_FILE), to_json({**data, "created_at": time.time()}))
    run_index.remember(record.path, entry=lambda: entry_under_lock(record.path))
    return record


# What a trial's entry learns as the sweep goes: the study trial it was asked as, the step its pruner stopped it at.
LEARNT = ("asked", "pruned_at")


def _planned(old: Optional[list], new: list) -> Optional[list]:
    """The recorded trials as the plan writes them: without what the sweep learnt as it went (the study trial each
    was asked as, the values the study chose where the plan has none)."""
    if not isinstance(old, list) or len(old) != len(new):
        return old
    return [
        {**{k: v for k, v in o.items() if k not in LEARNT}, **({"params": None} if n.get("params") is None else {})}
        for o, n in zip(old, new)
    ]


def _kept(old: list, new: list) -> list:
    """The plan's trials, with what the sweep learnt as it went kept (a re-run runs a chosen trial's values)."""
    return [
        {**n, **{k: o[k] for k in LEARNT if k in o}, **({"params": o.get("params")} if n.get("params") is None else {})}
        for o, n in zip(old, new)
    ]


def _what_runs(spec) -> dict:
    """A sweep spec less how trials are scored and when to stop launching (plan.NOT_IDENTITY): a record from before
    max_failures has none; a corrected metric or goal continues the sweep."""
    spec = spec or {}
    studied = spec.get("method") == "tpe" or spec.get("early_stopping") is not None  # SweepSpec.uses_study
    scoring = NOT_IDENTITY - ({"metric", "goal"} if studied else set())
    return {
        k: v for k, v in spec.items() if k not in scoring and not (k == "early_stopping" and v is None)
    }  # none: as before kit had it


def _refuse_a_namesake(sweep_id: str, path: str) -> None:
    """A sweep id names one sweep for `kit sweep status` / `kit cancel` from anywhere (kit's index), as a run id
    names one run (core/launch.py): an id the index holds for a sweep or run in another run root, in any state, is
    refused (its trials' run ids would be another's too). The same sweep run again in its own run root continues."""
    from launcher import run_index

    other = run_index.namesake(sweep_id, path)
    if other is None:
        return
    if not os.path.isfile(os.path.join(other, SWEEP_FILE)):
        raise KitError(f"sweep id {sweep_id} is taken by a run ", run_index.taken(sweep_id, other, live=False))
    try:
        state = state_now(SweepRecord(other).read())
    except KitError:
        state = "unreadable"
    if state == RunState.RUNNING:
        raise KitError(f"sweep id {sweep_id} is taken by a sweep still running ", run_index.taken(sweep_id, other))
    raise KitError(
        f"sweep id {sweep_id} is taken by a sweep that ended ({state}) ", run_index.taken(sweep_id, other, live=False)
    )


def is_sweep(run_root: str, run_id: Optional[str]) -> bool:
    return bool(run_id and os.path.isfile(os.path.join(run_root, run_id, SWEEP_FILE)))


def find_sweep(run_root: str, sweep_id: str) -> SweepRecord:
    if not is_sweep(run_root, sweep_id):
        raise KitError(f"sweep {sweep_id}: no sweep record under {run_root}/ (see `kit runs`)")
    return SweepRecord(os.path.abspath(os.path.join(run_root, sweep_id)))


def state_now(data: dict) -> str:
    """The recorded state; `lost` for a sweep whose driver died while it ran (its trials stopped themselves)."""
    state = data.get("state") or (TrialState.ARRAY if data.get("array_job_id") else "?")
    if state == RunState.RUNNING and data.get("driver_pid"):
        from launcher.supervise import tree

        if tree.same_process(data["driver_pid"], data.get("driver_start")) is None:
            return RunState.LOST
    return state


def list_sweeps(run_root: str) -> list[tuple[str, dict]]:
    """(sweep id, sweep.json) of every sweep under run_root, oldest first; an unreadable one costs one warning line
    naming its file, never the listing."""
    if not os.path.isdir(run_root):
        return []
    found = []
    for name in sorted(os.listdir(run_root)):
        if is_sweep(run_root, name):
            try:
                found.append((name, SweepRecord(os.path.join(run_root, name)).read()))
            except KitError as e:
                log.warning(f"kit: warning: {e}")
    return sorted(found, key=lambda item: item[1].get("created_at", 0))


def latest_sweep(run_root: str):
    if not os.path.isdir(run_root):
        return None
    found = [
        (os.path.getmtime(os.path.join(run_root, n, SWEEP_FILE)), n)
        for n in os.listdir(run_root)
        if is_sweep(run_root, n)
    ]
    return max(found)[1] if found else None


def latest_sweep_root(run_root: Optional[str]) -> str:
    """The run root that holds the newest sweep (of all this user's, when `run_root` is None)."""
    roots = [run_root] if run_root is not None else all_roots()
    newest = [(data.get("created_at") or 0, root) for root in roots for _, data in list_sweeps(root)]
    return max(newest)[1] if newest else (run_root or DEFAULT_ROOT)


def _entry(path: str, st: os.stat_result) -> dict:
    record = SweepRecord(path)
    return record.index_entry(record.read(), st)


# `kit runs` lists sweeps beside runs through the index's reader of this kind (run_index.py, a layer below).
run_index.register_kind(SWEEP_FILE, _entry, lambda path: state_now(SweepRecord(path).read()))

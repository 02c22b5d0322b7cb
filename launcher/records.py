"""Run records: runs/<run-id>/ holds the resolved specs, the plan, the generated files, logs and status (its
fields typed in status.py)."""

import logging
import json
import os
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Optional

from launcher import run_index
from launcher.errors import KitError, Option, RecordError
from launcher.filestore import locked, publish_new, reserve_room, unlink_quietly, write_atomic
from launcher.planning.model import LaunchPlan
from launcher.render.dryrun import masked_dict
from launcher.render.text import to_json, to_yaml
from launcher.secrets import mask_env
from launcher.states import OVER, RunState, allowed
from launcher.status import RunStatus, corrupt

log = logging.getLogger(__name__)

STATUS = "status.json"
# What a sweep's directory holds instead (sweeps/record.py): run ids and sweep ids share one namespace.
SWEEP_FILE = "sweep.json"
LOCK = ".status.lock"  # flock'd around each read-modify-write of the status
RESERVE = ".status.reserve"  # room kept for the status on a disk that fills up (write_atomic)
VERDICT = ("state", "exit_code", "failure", "finished_at", "node_exit_codes", "ended_by")
# An attempt's end: the run's verdict only once no restart follows it. A reopened run has none of it (the ended
# attempt keeps its own in the record's list of attempts).
ATTEMPT_END = VERDICT + ("stopped_nodes", "stopping")
_CLEARED = {
    "exit_code": None,
    "failure": None,
    "finished_at": None,
    "node_exit_codes": (),
    "ended_by": "",
    "stopped_nodes": (),
    "stopping": None,
}


def spec_record(spec, plan: LaunchPlan) -> dict:
    """A spec (or its data, already made by this function) as the record keeps it, with secret values masked:
    secret-looking names, and every name the job lists in `secret_env` (a job's `DB_URL` may have its value
    in the job's env or in the cluster's)."""
    data = dict(spec) if isinstance(spec, dict) else spec.model_dump(mode="json")
    declared = tuple(sorted({name for node in plan.nodes for name in node.secret_env}))
    if "env" in data:
        data["env"] = mask_env(data["env"], declared)
    return data


@dataclass
class RunRecord:
    path: str  # absolute directory of the run
    write_failed: bool = False  # a status write failed (a full disk): warned once
    # Set by the restart loop (backends/attempts.py) while a backend runs an attempt: whether a restart may follow
    # the attempt's end these fields describe. If so, end_attempt holds that end here (`held`) instead of writing
    # it as the run's verdict, and the loop decides: the end goes into the attempts list, or becomes the verdict.
    restart_may_follow: Optional[Callable[[dict], bool]] = None
    held: Optional[dict] = None

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def exists(self) -> bool:
        return os.path.isfile(self.file(STATUS))

    def read_status(self, strict: bool = False) -> RunStatus:
        """The record's status (an empty RunStatus when there is none); a damaged file, or one whose fields are
        not what kit writes, reads as state "corrupt" (or, with strict, a one-line error)."""
        try:
            with open(self.file(STATUS), encoding="utf-8") as f:
                return RunStatus.from_json(json.load(f))
        except FileNotFoundError:
            return RunStatus()
        except (ValueError, UnicodeDecodeError, OSError) as e:  # status.BadStatus is a ValueError
            if strict:
                raise RecordError(
                    f"run record {self.path}: {STATUS} is unreadable ({e}); inspect or remove that directory",
                    path=self.path,
                ) from None
            return corrupt(os.path.basename(self.path), f"{STATUS} is unreadable ({e})")

    def keep_attempt_plan(self, plan: LaunchPlan) -> None:
        """Attempt k's plan beside the first one's plan.json (secret values masked, as there)."""
        write_atomic(self.file(f"plan.attempt{plan.attempt}.json"), to_json(masked_dict(plan)))

    def update_status(self, reopen: bool = False, append: Optional[dict] = None, **fields) -> RunStatus:
        """Apply `fields` (RunStatus's own, type-checked) to the status on disk, under the record's lock (every
        writer goes through here: the follower, `kit status`, `kit cancel`, a sweep), and write it back atomically.
        The state moves only as states.py allows: once the run has ended, a writer that disagrees with its verdict
        (state, exit code, failure) is written into the record's history, not applied; `reopen`: a restart starts
        an ended run again. `append`: field -> entries added to that list field as it is on disk (writers that
        race each keep theirs). A full disk costs a warning (once per record) and keeps the last good record."""
        return self.amend(
            lambda current: {
                **fields,
                **{name: [*getattr(current, name), *more] for name, more in (append or {}).items()},
            },
            reopen,
        )

    def end_attempt(self, **fields) -> RunStatus:
        """An attempt's end (state, exit code, failure, end time, nodes' codes), written as update_status does:
        the run's verdict, unless the restart loop says a restart may follow (then held for it, see amend)."""
        return self.amend(lambda current: fields, attempt_end=True)

    def take_held(self) -> Optional[dict]:
        """The attempt's end held for the restart loop, if any, no longer held."""
        held, self.held = self.held, None
        return held

    def amend(self, change: Callable[[RunStatus], dict], reopen: bool = False, attempt_end: bool = False) -> RunStatus:
        """update_status with the fields computed from the status as it is under the lock, for a change that
        depends on what is there (numbering an entry by the list's length). `attempt_end`: the fields end an
        attempt; while a restart may follow it (restart_may_follow), its end is held in `held`, not written, and
        only what is not the end (a SLURM requeue count) is. `reopen` clears the last attempt's end."""
        with self._locked():
            current = self.read_status()
            if current.state == RunState.CORRUPT:  # never written over: what it held is unknown, and may still matter
                raise RecordError(
                    f"run record {self.path}: {STATUS} is unreadable ({current.note}); kit will not "
                    f"write over it: inspect or remove that directory",
                    path=self.path,
                )
            fields = change(current)
            if attempt_end and self.restart_may_follow is not None and self.restart_may_follow(fields):
                self.held = {k: v for k, v in fields.items() if k in ATTEMPT_END}
                fields = {k: v for k, v in fields.items() if k not in ATTEMPT_END}
            if reopen:
                fields = {**_CLEARED, **fields}
            if not fields:
                return current
            status = current.replace(**_verdict_kept(current, fields, reopen))
            try:
                # The room kept on a disk that fills up is for the verdict: a progress write (a timeline mark)
                # that would use it up fails with the warning instead, and the end can still be recorded.
                write_atomic(
                    self.file(STATUS),
                    to_json(status.to_json()),
                    reserve=self.file(RESERVE) if status.state in OVER else None,
                )
            except OSError as e:
                if not self.write_failed:
                    self.write_failed = True
                    log.warning(
                        f"kit: warning: cannot write {self.file(STATUS)}: {e.strerror or e}; the run goes on, "
                        f"its record keeps its last good state"
                    )
                return status
            if run_index.indexed(self.path):  # still under the lock: the index's entry follows every write
                try:
                    run_index.note(self.index_entry(status, os.stat(self.file(STATUS))))
                except OSError:
                    pass
            return status

    def index_entry(self, status: RunStatus, st: os.stat_result) -> dict:
        """What `kit runs` shows of this record (run_index.py), `st` being its status file's stat."""
        return {
            "path": os.path.abspath(self.path),
            "id": os.path.basename(self.path),
            "kind": "run",
            "job": status.job,
            "backend": status.backend,
            "state": str(status.state.value),
            "exit": status.exit_code,
            "created": status.created_at or 0,
            "began": status.began,
            "finished": status.finished_at,
            "job_id": status.scheduler_job_id,
            "owner": st.st_uid,
            "sig": signature(st),
        }

    def _locked(self):
        return locked(self.file(LOCK))


def signature(st: os.stat_result) -> list:
    """What tells one write of a record's file from another: each write is a new file renamed into place."""
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def _verdict_kept(current: RunStatus, fields: dict, reopen: bool) -> dict:
    """`fields` as the transition table lets them apply to `current`: a state it may not move to is dropped with
    the verdict that came with it (exit code, failure, end time), and the refused write goes into the history."""
    new = fields.get("state")
    if new is None or allowed(current.state, new, reopen):
        return fields
    kept = {k: v for k, v in fields.items() if k not in VERDICT}
    refused = {
        "at": time.time(),
        "pid": os.getpid(),
        "state": new,
        "exit_code": fields.get("exit_code"),
        "kept": current.state,
    }
    return {**kept, "history": [*current.history, refused]}


def create(workdir: str, plan: LaunchPlan, job, cluster) -> RunRecord:
    """Write the record and the plan's generated files (relative to workdir, as the nodes see them). `job` and
    `cluster`: the resolved specs, or their spec_record()s. The run id is claimed first, atomically: of two kit
    processes creating one run id at once, exactly one gets it. A record that cannot be written (a full disk, no
    permission) is one line, with nothing of it left."""
    path = os.path.join(workdir, plan.run_dir)
    record = RunRecord(path)
    first = RunStatus(
        run_id=plan.run_id, job=plan.job_name, backend=plan.backend, state=RunState.STARTING, created_at=time.time()
    )
    try:
        own_run_dir(path, plan.run_id)
        refuse_planted(
            [record.file(n) for n in (STATUS, RESERVE, LOCK, "job.yaml", "cluster.yaml", "plan.json")]
            + [os.path.join(workdir, rel) for rel in plan.files],
            plan.run_id,
        )
        claimed = publish_new(record.file(STATUS), to_json(first.to_json()))
    except OSError as e:
        raise KitError(
            f"cannot write the run record in {path}: {e.strerror or e}; free space or pick "
            f"another run root (cluster's run_root / workdir)"
        ) from None
    if not claimed:
        raise KitError(f"run {plan.run_id} already exists at {path}; pick another ", Option("run_id"))
    reserve_room(record.file(RESERVE))
    written = [record.file(STATUS), record.file(RESERVE), record.file(LOCK)]
    try:
        for name, text in (
            ("job.yaml", to_yaml(spec_record(job, plan))),
            ("cluster.yaml", to_yaml(spec_record(cluster, plan))),
            ("plan.json", to_json(masked_dict(plan))),
        ):
            written.append(record.file(name))
            write_atomic(record.file(name), text)
        for rel, content in plan.files.items():
            written.append(os.path.join(workdir, rel))
            write_atomic(os.path.join(workdir, rel), content)
    except OSError as e:
        for name in written:
            unlink_quietly(name)
        raise KitError(
            f"cannot write the run record in {path}: {e.strerror or e}; free space or pick "
            f"another run root (cluster's run_root / workdir)"
        ) from None
    return record


def own_run_dir(path: str, run_id: str) -> None:
    """The run's directory, made by this process (mode 0755 whatever the umask) or already this user's own real
    directory (left as it is). A symbolic link or another user's directory there is refused: in a shared run root
    a planted `runs/<run-id>` would have kit write into, and open up, a directory of the planter's choosing."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    try:
        os.mkdir(path, 0o700)  # never follows a link at `path`: a planted one is "exists"
    except FileExistsError:
        refuse_planted([path], run_id, directory=True)
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchmod(fd, 0o755)  # the directory this process made, not whatever the name may point to by now
    finally:
        os.close(fd)


def refuse_planted(paths: list[str], run_id: str, directory: bool = False) -> None:
    """One line (KitError) for a path kit would write for the run that is a symbolic link, is not this user's, or
    (the run's directory) is not a directory."""
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        what = (
            "a symbolic link"
            if stat.S_ISLNK(st.st_mode)
            else f"owned by uid {st.st_uid}, not by this user"
            if st.st_uid != os.geteuid()
            else "not a directory"
            if directory and not stat.S_ISDIR(st.st_mode)
            else None
        )
        if what:
            raise KitError(
                f"run {run_id}: {path} is {what}; kit will not write there: remove it or pick another ",
                Option("run_id"),
            )


@contextmanager
def tentative(workdir: str, plan: LaunchPlan, job, cluster):
    """create(), for a block that may still refuse the run before anything starts (kit submit's checks on the
    hosts): if it raises, the record goes again, exactly what create() wrote and the directories it made,
    nothing else (a directory that was there before keeps what it had)."""
    path = os.path.join(workdir, plan.run_dir)
    made, d = [], path
    while d and not os.path.exists(d):
        made.append(d)  # deepest first
        d = os.path.dirname(d)
    record = None
    try:
        record = create(workdir, plan, job, cluster)
        yield record
    except BaseException:
        if record is not None:
            written = [record.file(n) for n in ("job.yaml", "cluster.yaml", "plan.json", STATUS, RESERVE, LOCK)]
            for name in [*written, *(os.path.join(workdir, rel) for rel in plan.files)]:
                unlink_quietly(name)
        for d in made:
            try:
                os.rmdir(d)
            except OSError:  # not empty: something else is in it now
                pass
        raise


def find(run_root: str, run_id: str) -> RunRecord:
    path = os.path.join(run_root, run_id)
    if not os.path.isfile(os.path.join(path, STATUS)):
        raise KitError(f"run {run_id}: no record under {run_root}/ (see `kit runs`)")
    return RunRecord(os.path.abspath(path))


def list_records(run_root: str) -> list[tuple[str, RunStatus]]:
    if not os.path.isdir(run_root):
        return []
    out = []
    for name in sorted(os.listdir(run_root)):
        status_path = os.path.join(run_root, name, STATUS)
        if os.path.isfile(status_path):
            out.append((name, RunRecord(os.path.join(run_root, name)).read_status()))
    out.sort(key=lambda item: item[1].created_at or 0)
    return out


def latest(run_root: str) -> Optional[str]:
    records = list_records(run_root)
    return records[-1][0] if records else None

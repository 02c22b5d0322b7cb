"""A run's status (status.json in its record), typed: every field kit writes or reads is declared here, and a
record read back is checked field by field, since anyone who can write into a shared run root can write one.

`RunStatus.from_json` keeps what is well-formed and turns what is not into a "corrupt" record that names the
field; nothing read back is ever used as shell text or a path without its type and shape checked here."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, fields
from typing import Any, Optional

from launcher.backends import registry
from launcher.states import ACTIVE, FINAL, NOT_OVER, QUEUED, Meaning, RunState  # (states.py), re-exported here
from launcher.wellformed import HOST_NAME, RUN_ID, TICKS, BadStatus, checked, integer, items, number, pid, text

EVENT = re.compile(r"^[a-z][a-z_ ]{0,40}$")  # a timeline event's or a section's name


def _node(v) -> NodeStatus:
    if isinstance(v, NodeStatus):
        return v
    if not isinstance(v, dict):
        raise BadStatus(f"expected a node mapping, got {v!r}")
    checks = {
        "rank": lambda x: integer(x) or 0,
        "host": lambda x: text(x, HOST_NAME) or "?",
        "pid": pid,
        "start": number,
        "address": lambda x: text(x, HOST_NAME),
        "pgid": pid,
        "start_ticks": lambda x: text(_ticks(x), TICKS),
        "remote_start": number,
    }
    values: dict[str, Any] = {}  # field -> its checked value (of the field's type)
    for name, check in checks.items():
        try:
            values[name] = check(v.get(name))
        except BadStatus as e:
            raise BadStatus(f"{name}: {e}") from None
    return NodeStatus(**values)


def _ticks(v):
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _failure(v) -> Optional[Failure]:
    if v is None or isinstance(v, Failure):
        return v
    if not isinstance(v, dict):
        raise BadStatus(f"expected a failure mapping, got {v!r}")
    return Failure(
        node=integer(v.get("node")) or 0,
        host=text(v.get("host")) or "?",
        rank=integer(v.get("rank")),
        code=integer(v.get("code")) or 0,
        meaning=text(v.get("meaning")) or "",
        last_line=text(v.get("last_line")) or "",
    )


def _codes(v) -> tuple:
    if not isinstance(v, (list, tuple)):
        raise BadStatus(f"expected a list, got {v!r}")
    return tuple(integer(c) for c in v)


def _nodes(v) -> tuple:
    if not isinstance(v, (list, tuple)):
        raise BadStatus(f"expected a list, got {v!r}")
    out = []
    for i, n in enumerate(v):
        try:
            out.append(_node(n))
        except BadStatus as e:
            raise BadStatus(f"[{i}].{e}") from None
    return tuple(out)


def _attempt(v) -> dict:
    if not isinstance(v, dict):
        raise BadStatus(f"expected an attempt mapping, got {v!r}")
    return {
        "attempt": integer(v.get("attempt")),
        "started_at": number(v.get("started_at")),
        "finished_at": number(v.get("finished_at")),
        "state": text(v.get("state")),
        "cause": text(v.get("cause")),
        "exit_code": integer(v.get("exit_code")),
        "master_port": integer(v.get("master_port")),
        # whose failure it was (host health: insight/health.py)
        "host": text(v.get("host"), HOST_NAME),
        "meaning": text(v.get("meaning")),
        # how the restart after it went, for kit report's phases (backends/attempts.py): when kit saw the
        # failure, when every node had ended, and the restart's path (states.RestartPath)
        "noticed_at": number(v.get("noticed_at")),
        "nodes_ended_at": number(v.get("nodes_ended_at")),
        "restart": text(v.get("restart")),
    }


def _history(v) -> dict:
    if not isinstance(v, dict):
        raise BadStatus(f"expected a history mapping, got {v!r}")
    return {
        "at": number(v.get("at")),
        "pid": pid(v.get("pid")),
        "state": text(v.get("state")),
        "exit_code": integer(v.get("exit_code")),
        "kept": text(v.get("kept")),
    }


def _mark(v) -> dict:
    """A timeline entry kit wrote (insight/watch.py): when, what, which attempt, a word more."""
    if not isinstance(v, dict):
        raise BadStatus(f"expected a timeline mapping, got {v!r}")
    return {
        "at": number(v.get("at")),
        "event": text(v.get("event"), EVENT) or "?",
        "attempt": integer(v.get("attempt")),
        "detail": text(v.get("detail")) or "",
    }


def _straggler(v) -> Optional[dict]:
    """The rank kit named a straggler (insight/stragglers.py)."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise BadStatus(f"expected a straggler mapping, got {v!r}")
    return {
        "node": integer(v.get("node")),
        "host": text(v.get("host"), HOST_NAME) or "?",
        "rank": integer(v.get("rank")),
        "section": text(v.get("section"), EVENT) or "?",
        "ratio": number(v.get("ratio")),
        "score": number(v.get("score")),
        "at": number(v.get("at")),
        "own_s": number(v.get("own_s")),
        "fastest_s": number(v.get("fastest_s")),
        "load": number(v.get("load")),
        "cpus": integer(v.get("cpus")),
        "wait_s": number(v.get("wait_s")),
        "threads": integer(v.get("threads")),
    }


def _backend(v) -> str:
    v = text(v) or registry.DEFAULT
    if not registry.known(v):
        raise BadStatus(f"{v!r} is not a backend kit has")
    return v


MAX_LAST_LINE = 400


@dataclass(frozen=True)
class Failure:
    """The first failure of a run: node, host, rank, the rank's own exit code, what it means, its last words."""

    node: int
    host: str
    rank: Optional[int]  # global rank, when the launcher named it
    code: int  # the rank's own exit code (or the node's, when no rank is named)
    meaning: str
    last_line: str

    def __post_init__(self):
        # A rank's last line may be megabytes (a dumped tensor): the record and the one-line failure keep its start.
        if len(self.last_line or "") > MAX_LAST_LINE:
            object.__setattr__(self, "last_line", self.last_line[:MAX_LAST_LINE] + " [...]")

    @property
    def preempted(self) -> bool:
        return self.code == PREEMPTED


PREEMPTED = 75  # EX_TEMPFAIL: "preempted, requeue me", whatever the program
# A Failure's meanings that are not the node's own verdict (states.Meaning): its host stopped answering, the world
# did not form in time, no rank made progress, the scheduler ended the job before any node's command ran.
LOST, NEVER_JOINED, HUNG, NOT_STARTED = Meaning.HOST_LOST, Meaning.NEVER_JOINED, Meaning.HUNG, Meaning.NOT_STARTED


@dataclass(frozen=True)
class NodeStatus:
    """One node of a running run: where it runs and the process kit can find it by (local: the watchdog's pid and
    start time; SSH: the remote watchdog's pid, process group and start ticks; SLURM: the host once known)."""

    rank: int
    host: str = "?"
    pid: Optional[int] = None
    start: Optional[float] = None  # local: psutil create_time of the watchdog
    address: Optional[str] = None  # SSH: what kit dialled
    pgid: Optional[int] = None
    start_ticks: Optional[str] = None  # SSH: the watchdog's start time in /proc ticks, digits only
    remote_start: Optional[float] = None


@dataclass(frozen=True)
class RunStatus:
    run_id: str = checked("", lambda v: text(v, RUN_ID) or "")
    job: str = checked("", lambda v: text(v) or "")
    backend: str = checked(registry.DEFAULT, _backend)
    state: RunState = checked(RunState.UNKNOWN, lambda v: RunState.read(text(v)))
    created_at: Optional[float] = checked(None, number)
    submitted_at: Optional[float] = checked(None, number)
    started_at: Optional[float] = checked(None, number)
    finished_at: Optional[float] = checked(None, number)
    exit_code: Optional[int] = checked(None, integer)
    node_exit_codes: tuple = checked((), _codes)  # per node: int, or None when it wrote none
    stopped_nodes: tuple = checked((), _codes)  # nodes kit stopped: their exit codes are kit's doing
    failure: Optional[Failure] = checked(None, _failure)
    # A watch's verdict on a SLURM job kit is cancelling (hang, world not formed), written before the scancel:
    # the run's verdict once the job ends cancelled, whoever reads that end first (slurm/follow.with_kits_verdict).
    stopping: Optional[Failure] = checked(None, _failure)
    nodes: tuple = checked((), _nodes)  # NodeStatus per node
    supervisor_pid: Optional[int] = checked(None, pid)  # the kit process that follows the run (local, SSH)
    supervisor_start: Optional[float] = checked(None, number)
    teardown_grace: Optional[float] = checked(None, number)
    ended_by: str = checked("", lambda v: text(v) or "")
    # Earlier attempts of a run kit started again (restarts): attempt, started_at, finished_at, state, exit_code, cause,
    # noticed_at, nodes_ended_at, restart (see _attempt).
    attempts: tuple = checked((), lambda v: tuple(_attempt(a) for a in (items(v) or [])))
    # Why the state is what it is, when kit knows more than the state.
    note: str = checked("", lambda v: text(v) or "")
    # Writes the record refused: a verdict another writer disagreed with once the run had ended (records.py).
    history: tuple = checked((), lambda v: tuple(_history(h) for h in (items(v) or [])))
    # What kit saw happen, beside attempts' starts and ends (insight/watch.py): world formed, queued, ...
    timeline: tuple = checked((), lambda v: tuple(_mark(m) for m in (items(v) or [])))
    # The rank kit named as the one that paces the world (insight/stragglers.py), once.
    straggler: Optional[dict] = checked(None, _straggler)
    # The backend's own facts about the run (a SLURM job id, SSH connection settings): its Handle
    # (backends/handle.py), checked by the backend's own rules; None for a backend that keeps none.
    handle: Any = checked(None, lambda v: v)

    def __post_init__(self):
        if not isinstance(self.state, RunState):
            object.__setattr__(self, "state", RunState.read(self.state))
        if self.handle is None and (kind := registry.handle_class(self.backend)) is not None:
            object.__setattr__(self, "handle", kind())

    @property
    def over(self) -> bool:
        return self.state not in NOT_OVER

    @property
    def began(self) -> Optional[float]:
        """When the run began: its first attempt's start once it was restarted (started_at is the latest
        attempt's), else its start, submission or creation, so that a duration covers every attempt."""
        first = self.attempts[0].get("started_at") if self.attempts else None
        return first or self.started_at or self.submitted_at or self.created_at

    @property
    def scheduler_job_id(self) -> Optional[str]:
        """The id a scheduler knows the run by (a SLURM job), as its backend's handle says; else None."""
        return self.handle.scheduler_job_id() if self.handle is not None else None

    def replace(self, **changes) -> "RunStatus":
        """A copy with `changes` applied, the fields of the backend's handle among them (set on the handle); a name
        that is neither is a bug (TypeError), not a new key."""
        own = {k: _coerce(k, v) for k, v in changes.items() if k in _CHECKS}
        theirs = {k: v for k, v in changes.items() if k not in _CHECKS}
        if theirs:
            if self.handle is None:
                raise TypeError(f"RunStatus has no field {next(iter(theirs))!r} (a {self.backend} run keeps no handle)")
            own["handle"] = own.get("handle", self.handle).replace(**theirs)
        return dataclasses.replace(self, **own)

    def to_json(self) -> dict:
        data = dataclasses.asdict(dataclasses.replace(self, handle=None))
        data["handle"] = self.handle.to_json() if self.handle is not None else None
        return data

    @classmethod
    def from_json(cls, data: Any) -> "RunStatus":
        """The status in `data` (status.json's object); BadStatus names the first field that is not well-formed.
        Keys kit does not write are ignored (a newer kit's, or someone else's). The backend's handle is read by its
        own rules, under "handle" (or, in a record written before handles, from the top level)."""
        if not isinstance(data, dict):
            raise BadStatus("not a JSON object")
        values = {}
        for name, value in data.items():
            if name in _CHECKS and name != "handle":
                try:
                    values[name] = _coerce(name, value)
                except BadStatus as e:
                    said = str(e)
                    raise BadStatus(f"{name}{said}" if said.startswith("[") else f"{name}: {said}") from None
        kind = registry.handle_class(values.get("backend", registry.DEFAULT))
        if kind is not None:
            values["handle"] = kind.read(data)
        return cls(**values)


_CHECKS = {f.name: f.metadata["check"] for f in fields(RunStatus)}


def _coerce(name: str, value):
    if name not in _CHECKS:
        raise TypeError(f"RunStatus has no field {name!r}")
    return _CHECKS[name](value)


def corrupt(run_id: str, why: str) -> RunStatus:
    return RunStatus(run_id=run_id if RUN_ID.fullmatch(run_id or "") else "", state=RunState.CORRUPT, note=why)


__all__ = [
    "RunStatus",
    "NodeStatus",
    "Failure",
    "BadStatus",
    "ACTIVE",
    "QUEUED",
    "NOT_OVER",
    "FINAL",
    "PREEMPTED",
    "corrupt",
]

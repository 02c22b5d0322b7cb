"""A run's status (status.json in its record), typed: every field kit writes or reads is declared here, and a
record read back is checked field by field, since anyone who can write into a shared run root can write one.

`RunStatus.from_json` keeps what is well-formed and turns what is not into a "corrupt" record that names the
field; nothing read back is ever used as shell text or a path without its type and shape checked here."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any, Optional

from launcher.backends import registry

# Run states and their transitions: states.py.
from launcher.states import ACTIVE, FINAL, NOT_OVER, QUEUED  # noqa: E402  (re-exported: status.ACTIVE, ...)

HOST_NAME = re.compile(r"^[A-Za-z0-9?][A-Za-z0-9_.:%-]*$")   # "?": a SLURM node not known yet; %: IPv6 zone
JOB_ID = re.compile(r"^\d+(_\d+)?$")                        # SLURM job id, or <array id>_<task>
TICKS = re.compile(r"^\d+$")                                # a process's start time in clock ticks (/proc)
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
RUN_DIR = re.compile(r"^[^\x00-\x1f\x7f]+$")   # a path (the cluster's run_root + the run id): one line
EVENT = re.compile(r"^[a-z][a-z_ ]{0,40}$")     # a timeline event's or a section's name


class BadStatus(ValueError):
    """A field of a record read back is not what kit writes there."""


def _int(v) -> Optional[int]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadStatus(f"expected an integer, got {v!r}")
    return v


def _pid(v) -> Optional[int]:
    if v is None or v == "-":   # SLURM records say "-" where no pid is known
        return None
    v = _int(v)
    if v <= 0:
        raise BadStatus(f"expected a process id, got {v!r}")
    return v


def _float(v) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise BadStatus(f"expected a number, got {v!r}")
    return float(v)


def _str(v, pattern=None) -> Optional[str]:
    if v is None:
        return None
    if not isinstance(v, str):
        raise BadStatus(f"expected a string, got {v!r}")
    if pattern is not None and not pattern.fullmatch(v):
        raise BadStatus(f"{v!r} is not well-formed")
    return v


def _dict(v) -> Optional[dict]:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise BadStatus(f"expected a mapping, got {v!r}")
    return v


def _node(v) -> NodeStatus:
    if isinstance(v, NodeStatus):
        return v
    if not isinstance(v, dict):
        raise BadStatus(f"expected a node mapping, got {v!r}")
    checks = {"rank": lambda x: _int(x) or 0, "host": lambda x: _str(x, HOST_NAME) or "?", "pid": _pid,
              "start": _float, "address": lambda x: _str(x, HOST_NAME), "pgid": _pid,
              "start_ticks": lambda x: _str(_ticks(x), TICKS), "remote_start": _float}
    values = {}
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
    return Failure(node=_int(v.get("node")) or 0, host=_str(v.get("host")) or "?", rank=_int(v.get("rank")),
                   code=_int(v.get("code")) or 0, meaning=_str(v.get("meaning")) or "",
                   last_line=_str(v.get("last_line")) or "")


def _codes(v) -> tuple:
    if not isinstance(v, (list, tuple)):
        raise BadStatus(f"expected a list, got {v!r}")
    return tuple(_int(c) for c in v)


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


def _list(v) -> Optional[list]:
    if v is None:
        return None
    if not isinstance(v, (list, tuple)):
        raise BadStatus(f"expected a list, got {v!r}")
    return list(v)


def _attempt(v) -> dict:
    if not isinstance(v, dict):
        raise BadStatus(f"expected an attempt mapping, got {v!r}")
    return {"attempt": _int(v.get("attempt")), "started_at": _float(v.get("started_at")),
            "finished_at": _float(v.get("finished_at")), "state": _str(v.get("state")), "cause": _str(v.get("cause")),
            "exit_code": _int(v.get("exit_code")), "master_port": _int(v.get("master_port")),
            "host": _str(v.get("host"), HOST_NAME), "meaning": _str(v.get("meaning"))}


def _history(v) -> dict:
    if not isinstance(v, dict):
        raise BadStatus(f"expected a history mapping, got {v!r}")
    return {"at": _float(v.get("at")), "pid": _pid(v.get("pid")), "state": _str(v.get("state")),
            "exit_code": _int(v.get("exit_code")), "kept": _str(v.get("kept"))}


def _mark(v) -> dict:
    """A timeline entry kit wrote (insight/timeline.py): when, what, which attempt, a word more."""
    if not isinstance(v, dict):
        raise BadStatus(f"expected a timeline mapping, got {v!r}")
    return {"at": _float(v.get("at")), "event": _str(v.get("event"), EVENT) or "?", "attempt": _int(v.get("attempt")),
            "detail": _str(v.get("detail")) or ""}


def _straggler(v) -> Optional[dict]:
    """The rank kit named a straggler (insight/stragglers.py)."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise BadStatus(f"expected a straggler mapping, got {v!r}")
    return {"node": _int(v.get("node")), "host": _str(v.get("host"), HOST_NAME) or "?", "rank": _int(v.get("rank")),
            "section": _str(v.get("section"), EVENT) or "?", "ratio": _float(v.get("ratio")),
            "score": _float(v.get("score")), "at": _float(v.get("at"))}


def _backend(v) -> str:
    v = _str(v) or registry.DEFAULT
    if not registry.known(v):
        raise BadStatus(f"{v!r} is not a backend kit has")
    return v


def _checked(default, check):
    """A RunStatus field's default, with the function that checks a value read back or written."""
    return field(default=default, metadata={"check": check})


MAX_LAST_LINE = 400


@dataclass(frozen=True)
class Failure:
    """The first failure of a run: node, host, rank, the rank's own exit code, what it means, its last words."""
    node: int
    host: str
    rank: Optional[int]     # global rank, when the launcher named it
    code: int               # the rank's own exit code (or the node's, when no rank is named)
    meaning: str
    last_line: str

    def __post_init__(self):
        # A rank's last line may be megabytes (a dumped tensor): the record and the one-line failure keep its start.
        if len(self.last_line or "") > MAX_LAST_LINE:
            object.__setattr__(self, "last_line", self.last_line[:MAX_LAST_LINE] + " [...]")

    @property
    def preempted(self) -> bool:
        return self.code == PREEMPTED


PREEMPTED = 75   # EX_TEMPFAIL: "preempted, requeue me", whatever the program
LOST = "lost"    # a Failure's meaning when its node's host stopped answering (not the node's own verdict)
NEVER_JOINED = "never joined"   # ... when the world did not form in time (supervise/world.py)
HUNG = "hung"    # ... when no rank made progress for timeouts.hang (supervise/hang.py)
NOT_STARTED = "never started"   # ... when the scheduler ended the job before any node's command ran


@dataclass(frozen=True)
class NodeStatus:
    """One node of a running run: where it runs and the process kit can find it by (local: the watchdog's pid and
    start time; SSH: the remote watchdog's pid, process group and start ticks; SLURM: the host once known)."""
    rank: int
    host: str = "?"
    pid: Optional[int] = None
    start: Optional[float] = None          # local: psutil create_time of the watchdog
    address: Optional[str] = None          # SSH: what kit dialled
    pgid: Optional[int] = None
    start_ticks: Optional[str] = None      # SSH: the watchdog's start time in /proc ticks, digits only
    remote_start: Optional[float] = None


@dataclass(frozen=True)
class RunStatus:
    run_id: str = _checked("", lambda v: _str(v, RUN_ID) or "")
    job: str = _checked("", lambda v: _str(v) or "")
    backend: str = _checked(registry.DEFAULT, _backend)
    state: str = _checked("?", lambda v: _str(v) or "?")
    created_at: Optional[float] = _checked(None, _float)
    submitted_at: Optional[float] = _checked(None, _float)
    started_at: Optional[float] = _checked(None, _float)
    finished_at: Optional[float] = _checked(None, _float)
    exit_code: Optional[int] = _checked(None, _int)
    node_exit_codes: tuple = _checked((), _codes)           # per node: int, or None when it wrote none
    failure: Optional[Failure] = _checked(None, _failure)
    nodes: tuple = _checked((), _nodes)                     # NodeStatus per node
    supervisor_pid: Optional[int] = _checked(None, _pid)    # the kit process that follows the run (local, SSH)
    supervisor_start: Optional[float] = _checked(None, _float)
    teardown_grace: Optional[float] = _checked(None, _float)
    # SSH
    ssh: Optional[dict] = _checked(None, _dict)             # connection settings (no secrets), to log in again
    accepted_host_keys: Optional[list] = _checked(None, _list)
    timings: Optional[dict] = _checked(None, _dict)         # seconds per phase (bench/ssh_fanout.py reads them)
    # SLURM
    job_id: Optional[str] = _checked(None, lambda v: _str(v, JOB_ID))
    array_job_id: Optional[str] = _checked(None, lambda v: _str(v, JOB_ID))
    workdir: Optional[str] = _checked(None, _str)           # the cluster's workdir as the SLURM commands see it
    run_dir: Optional[str] = _checked(None, lambda v: _str(v, RUN_DIR))   # relative to workdir
    max_requeues: Optional[int] = _checked(None, _int)
    login_host: Optional[str] = _checked(None, lambda v: _str(v, HOST_NAME))
    login_ssh: Optional[dict] = _checked(None, _dict)
    restarts: int = _checked(0, lambda v: _int(v) or 0)
    slurm_state: Optional[str] = _checked(None, _str)
    ended_by: str = _checked("", lambda v: _str(v) or "")
    # Earlier attempts of a run kit started again (restarts): attempt, started_at, finished_at, state, exit_code, cause.
    attempts: tuple = _checked((), lambda v: tuple(_attempt(a) for a in (_list(v) or [])))
    # Why the state is what it is, when kit knows more than the state.
    note: str = _checked("", lambda v: _str(v) or "")
    # Writes the record refused: a verdict another writer disagreed with once the run had ended (records.py).
    history: tuple = _checked((), lambda v: tuple(_history(h) for h in (_list(v) or [])))
    # What kit saw happen, beside attempts' starts and ends (insight/timeline.py): world formed, queued, ...
    timeline: tuple = _checked((), lambda v: tuple(_mark(m) for m in (_list(v) or [])))
    # The rank kit named as the one that paces the world (insight/stragglers.py), once.
    straggler: Optional[dict] = _checked(None, _straggler)

    @property
    def over(self) -> bool:
        return self.state not in NOT_OVER

    @property
    def began(self) -> Optional[float]:
        """When the run began: its first attempt's start once it was restarted (started_at is the latest
        attempt's), else its start, submission or creation, so that a duration covers every attempt."""
        first = self.attempts[0].get("started_at") if self.attempts else None
        return first or self.started_at or self.submitted_at or self.created_at

    def replace(self, **changes) -> "RunStatus":
        """A copy with `changes` applied; a name that is no field is a bug (TypeError), not a new key."""
        return dataclasses.replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> "RunStatus":
        """The status in `data` (status.json's object); BadStatus names the first field that is not well-formed.
        Keys kit does not write are ignored (a newer kit's, or someone else's)."""
        if not isinstance(data, dict):
            raise BadStatus("not a JSON object")
        known = {f.name for f in fields(cls)}
        values = {}
        for name, value in data.items():
            if name in known:
                try:
                    values[name] = _coerce(name, value)
                except BadStatus as e:
                    text = str(e)
                    raise BadStatus(f"{name}{text}" if text.startswith("[") else f"{name}: {text}") from None
        return cls(**values)


_CHECKS = {f.name: f.metadata["check"] for f in fields(RunStatus)}


def _coerce(name: str, value):
    if name not in _CHECKS:
        raise TypeError(f"RunStatus has no field {name!r}")
    return _CHECKS[name](value)


def corrupt(run_id: str, why: str) -> RunStatus:
    return RunStatus(run_id=run_id if RUN_ID.fullmatch(run_id or "") else "", state="corrupt", note=why)


__all__ = ["RunStatus", "NodeStatus", "Failure", "BadStatus", "ACTIVE", "QUEUED", "NOT_OVER", "FINAL", "PREEMPTED",
           "corrupt"]

"""Host health, read from the records in kit's index: per host, the runs it took part in and the failures it caused
(lost, never joined, hung, a rank killed by a signal), with run ids and dates; only trusted records count
(launcher/trust.py): a record another user could have written says nothing about a host. A host that caused a
failure in one of its last two runs is one to place away from (planning/health.py), until `kit hosts --clear HOST`
forgives what it did up to then ($KIT_HOME/hosts.json keeps when)."""

import logging
import json
import os
import time
from dataclasses import dataclass, field
from typing import Optional

from launcher import run_index
from launcher.states import Meaning, RunState

log = logging.getLogger(__name__)

# The failures' meanings (launcher/status.py's words; records and status are imported only when there are records:
# a dry-run with none stays light).
LOST, NEVER_JOINED, HUNG = Meaning.HOST_LOST, Meaning.NEVER_JOINED, Meaning.HUNG

CLEARED_FILE = "hosts.json"
RECENT = 2  # a host's last runs that count
SKIPPED = ("?", "localhost")  # not a host of a cluster (an allocation not known yet; the local backend)


@dataclass(frozen=True)
class HostFailure:
    host: str
    run_id: str
    at: float
    attempt: int
    cause: str  # the failure's one line, as kit status says it

    @property
    def why(self) -> str:
        """How the placement notes say it: `failed in run R (lost, 2026-12-06 22:40)`."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.at))
        return f"failed in run {self.run_id} ({_kind(self.cause)}, {when})"


@dataclass
class HostRecord:
    host: str
    backend: str
    runs: list = field(default_factory=list)  # (created_at, run_id), oldest first
    failures: list = field(default_factory=list)  # HostFailure, oldest first


def _kind(cause: str) -> str:
    for word in (LOST, NEVER_JOINED, HUNG):
        if f" {word}" in cause:
            return word
    return "killed by a signal" if "killed by SIG" in cause else RunState.FAILED


def caused_by_host(meaning: Optional[str]) -> bool:
    """Failures that say something about the host, not the job: a lost host, a node that never joined, a hang, a
    rank killed by a signal (the kernel's OOM killer, a node's watchdog...)."""
    return bool(meaning and (meaning in (LOST, NEVER_JOINED, HUNG) or meaning.startswith("killed by SIG")))


def _failures(status) -> list:
    """(attempt, host, meaning, cause, at) of every attempt of a run that ended badly."""
    from launcher.supervise.failure import cause

    out = [
        (a.get("attempt") or i + 1, a.get("host"), a.get("meaning"), a.get("cause") or "", a.get("finished_at"))
        for i, a in enumerate(status.attempts)
    ]
    f = status.failure
    if f is not None and status.over:
        out.append((len(status.attempts) + 1, f.host, f.meaning, cause(f), status.finished_at))
    return out


def ledger(roots: Optional[list] = None) -> dict:
    """host -> HostRecord, from every record under `roots` (default: every run root in kit's index)."""
    hosts: dict = {}
    roots = run_index.run_roots() if roots is None else roots
    if not roots:
        return {}
    from launcher import records
    from launcher.trust import untrusted

    for root in roots:
        for run_id, status in records.list_records(root):
            if status.state == RunState.CORRUPT or untrusted(records.RunRecord(os.path.join(root, run_id))) is not None:
                continue
            created = status.created_at or 0.0
            used = {n.host for n in status.nodes}
            for attempt, host, meaning, said, at in _failures(status):
                if host and caused_by_host(meaning):
                    used.add(host)
                    _host(hosts, host, status.backend).failures.append(
                        HostFailure(host, run_id, at or created, attempt, said)
                    )
            for host in used - set(SKIPPED):
                _host(hosts, host, status.backend).runs.append((created, run_id))
    for h in hosts.values():
        h.runs.sort()
        h.failures.sort(key=lambda f: f.at)
    return {name: h for name, h in hosts.items() if name not in SKIPPED}


def _host(hosts: dict, name: str, backend: str) -> HostRecord:
    return hosts.setdefault(name, HostRecord(name, backend))


def _cleared_path() -> str:
    return os.path.join(run_index.kit_home(), CLEARED_FILE)


def cleared(strict: bool = False) -> dict:
    """host -> when `kit hosts --clear` forgave it. A file that is not kit's (malformed, not a mapping) costs one
    warning and forgives nobody; `strict` (before writing it): a KitError, so no one's entries are written over."""
    path = _cleared_path()
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        return _unreadable(path, str(e), strict)
    if not isinstance(data, dict) or not isinstance(data.get("cleared", {}), dict):
        return _unreadable(path, "not a mapping of cleared hosts", strict)
    return {
        h: float(t)
        for h, t in data.get("cleared", {}).items()
        if isinstance(h, str) and isinstance(t, (int, float)) and not isinstance(t, bool)
    }


def _unreadable(path: str, why: str, strict: bool) -> dict:
    if strict:
        from launcher.errors import RecordError

        raise RecordError(f"{path} is unreadable ({why}); fix or remove it, then clear the host again", path=path)
    log.warning(f"kit: warning: {path} is unreadable ({why}); no host counts as cleared")
    return {}


def clear(host: str, now: Optional[float] = None) -> None:
    """Forgive `host` as of `now`: one read-modify-write of hosts.json under its lock, written atomically."""
    from launcher.filestore import locked, write_atomic

    os.makedirs(run_index.kit_home(), mode=0o700, exist_ok=True)
    with locked(_cleared_path() + ".lock"):
        data = {"cleared": {**cleared(strict=True), host: time.time() if now is None else now}}
        write_atomic(_cleared_path(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def suspect(h: HostRecord, forgiven: Optional[float] = None) -> Optional[HostFailure]:
    """The failure that makes this host one to avoid: caused in one of its last RECENT runs since it was last
    forgiven; None when it is healthy."""
    runs = [run_id for created, run_id in h.runs if forgiven is None or created > forgiven]
    recent = set(runs[-RECENT:])
    found = [f for f in h.failures if f.run_id in recent and (forgiven is None or f.at > forgiven)]
    return found[-1] if found else None


def failed_hosts(backend: str, names: Optional[list] = None) -> tuple:
    """((host, why), ...) for the planner: the suspect hosts among `names` (a cluster's listed hosts), or among
    the hosts this backend's runs used (a scheduler's nodes), sorted."""
    book, forgiven = ledger(), cleared()
    out = []
    for name, h in book.items():
        if (names is not None and name not in names) or (names is None and h.backend != backend):
            continue
        found = suspect(h, forgiven.get(name))
        if found is not None:
            out.append((name, found.why))
    return tuple(sorted(out))


__all__ = ["HostFailure", "HostRecord", "ledger", "cleared", "clear", "suspect", "failed_hosts", "caused_by_host"]

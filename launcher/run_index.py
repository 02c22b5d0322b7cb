"""One index of a user's runs, wherever their records are: `kit runs / status / logs / cancel` find any run of any
backend from any directory.

The index is a directory of symbolic links, `$KIT_HOME/index/<run id>` -> the run's (or sweep's) record directory
(`$KIT_HOME` defaults to ~/.kit). A link is made atomically (a new link renamed over the name), so concurrent
submissions never corrupt it; a record deleted since is skipped and its link removed. The record stays the truth:
the index only says where it is. It lives on the submitting machine only, never on a cluster's hosts."""

import os
from typing import Optional

INDEX = "index"


def kit_home() -> str:
    """$KIT_HOME, else ~/.kit. A relative KIT_HOME is taken from your home directory, so that every directory
    kit runs in sees one index."""
    home = os.path.expanduser(os.environ.get("KIT_HOME") or "~/.kit")
    return os.path.normpath(os.path.join(os.path.expanduser("~"), home))


def _index_dir() -> str:
    return os.path.join(kit_home(), INDEX)


def remember(record_path: str) -> None:
    """Index the record at `record_path` under its directory's name. Best effort: a kit home that cannot be
    written (a read-only home) costs only the index, never the run."""
    name = os.path.basename(record_path.rstrip("/"))
    link = os.path.join(_index_dir(), name)
    tmp = os.path.join(_index_dir(), f".new-{os.getpid()}-{name}")   # a dot name: never a run id
    try:
        os.makedirs(_index_dir(), mode=0o700, exist_ok=True)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        os.symlink(os.path.abspath(record_path), tmp)
        os.replace(tmp, link)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def where(run_id: str) -> Optional[str]:
    """The record directory of `run_id`, or None when the index has none (or the record is gone)."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        return None
    link = os.path.join(_index_dir(), run_id)
    try:
        target = os.readlink(link)
    except OSError:
        return None
    if os.path.isdir(target):
        return target
    if os.path.isdir(os.path.dirname(target)):
        _forget(link)   # the record was deleted; a run root that is not there now (an unmounted disk) is kept
    return None


def root_flag(record_path: str, default_root: str = "runs") -> str:
    """` --run-root DIR` for a hint that names `kit status/logs/cancel <id>`, only where those would not find the
    record by its id alone from here: ./runs holds another run of that id, or the index does not point at it (the
    same order as core/lookup.py's root_of); else ""."""
    path = os.path.realpath(record_path)
    here = os.path.join(default_root, os.path.basename(path))
    found = here if os.path.isdir(here) else where(os.path.basename(path))
    return "" if found and os.path.realpath(found) == path else f" --run-root {os.path.dirname(record_path)}"


def namesake(run_id: str, path: str) -> Optional[str]:
    """The record directory the index gives `run_id` when it is not `path` (another run of that id elsewhere)."""
    other = where(run_id)
    return None if other is None or os.path.realpath(other) == os.path.realpath(path) else other


def taken(run_id: str, other: str, live: bool = True) -> str:
    """Where the namesake of `run_id` is and what to do, for the one-line refusal: another id (one the index does
    not hold), or, while it is `live`, ending that run."""
    end = f" (or end that one: kit cancel {run_id} --run-root {os.path.dirname(other)})" if live else ""
    return f"at {other}; pick another --run-id, e.g. {free_id(run_id)}{end}"


def free_id(run_id: str) -> str:
    """`<run id>-N` for the first N from 2 that no indexed run holds."""
    n = 2
    while where(f"{run_id}-{n}") is not None:
        n += 1
    return f"{run_id}-{n}"


def _forget(link: str) -> None:
    try:
        os.unlink(link)
    except OSError:
        pass


def starting(prefix: str) -> list[str]:
    """The indexed ids (runs and sweeps) that begin with `prefix` and whose records are still there."""
    try:
        names = os.listdir(_index_dir())
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(prefix) and not n.startswith(".") and where(n) is not None)


def run_roots() -> list[str]:
    """Every directory that holds an indexed record (a run root), each once, for listing."""
    try:
        names = os.listdir(_index_dir())
    except OSError:
        return []
    roots = {}
    for name in names:
        if name.startswith("."):
            continue
        target = where(name)
        if target is not None:
            roots.setdefault(os.path.dirname(target), None)
    return sorted(roots)


__all__ = ["kit_home", "remember", "where", "starting", "run_roots"]

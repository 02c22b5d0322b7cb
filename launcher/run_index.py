"""One index of a user's runs, wherever their records are: `kit runs / status / logs / cancel` find any run of any
backend from any directory.

The index is a directory of symbolic links, `$KIT_HOME/index/<run id>` -> the run's (or sweep's) record directory
(`$KIT_HOME` defaults to ~/.kit). A link is made atomically (a new link renamed over the name), so concurrent
submissions never corrupt it; a record deleted since is skipped and its link removed. The record stays the truth:
the index only says where it is. It lives on the submitting machine only, never on a cluster's hosts.

Beside the links, `index/.entries` keeps what `kit runs` shows of each record (id, job, backend, state, exit code,
times, owner, record path: an entry, made by core/listing.py), so that a listing reads no full record: one JSON line
per write, appended under `index/.entries.lock` (concurrent writers each keep theirs), the last line of a path wins.
A record's writer appends its entry under the record's own lock after each status write (records.py); an entry
carries its status file's signature (inode, mtime, size), so that one that is stale or missing (a writer that
crashed in between, an older kit) is found at listing time and written again. The file is rewritten without its
superseded lines when they outnumber the live ones."""

import json
import os
from typing import Optional

INDEX = "index"
ENTRIES = ".entries"
_ENTRIES_LOCK = ".entries.lock"
_SLACK = 1000  # superseded lines tolerated beyond as many as there are live entries, before a rewrite


def kit_home() -> str:
    """$KIT_HOME, else ~/.kit. A relative KIT_HOME is taken from your home directory, so that every directory
    kit runs in sees one index."""
    home = os.path.expanduser(os.environ.get("KIT_HOME") or "~/.kit")
    return os.path.normpath(os.path.join(os.path.expanduser("~"), home))


def _index_dir() -> str:
    return os.path.join(kit_home(), INDEX)


# Readers of record kinds above this layer, by the file that marks such a record: a listing of runs and sweeps asks
# them (sweeps/record.py registers the sweep's when it is imported), and this layer imports nothing above it.
KIND_READERS: dict = {}


def register_kind(marker_file: str, entry, state_now) -> None:
    """`entry(path, stat_of_marker) -> dict`: the record's index entry, read in full; `state_now(path) -> str`."""
    KIND_READERS[marker_file] = (entry, state_now)


def remember(record_path: str, entry=None) -> None:
    """Index the record at `record_path` under its directory's name, with its entry (`entry()`, called after the
    link is made: the caller reads it under the record's lock). Best effort: a kit home that cannot be written (a
    read-only home) costs only the index, never the run."""
    name = os.path.basename(record_path.rstrip("/"))
    link = os.path.join(_index_dir(), name)
    tmp = os.path.join(_index_dir(), f".new-{os.getpid()}-{name}")  # a dot name: never a run id
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
        return
    found = entry() if entry is not None else None
    if found is not None:
        note(found)


def indexed(record_path: str) -> bool:
    """Does the index link this record's id to this record (not to a namesake, nor to nothing)?"""
    link = os.path.join(_index_dir(), os.path.basename(record_path.rstrip("/")))
    try:
        return os.path.abspath(os.readlink(link)) == os.path.abspath(record_path)
    except OSError:
        return False


def note(*entries: dict) -> None:
    """Append records' entries (records.py, sweeps/record.py make them) to the index's. Best effort, as remember()."""
    from launcher.errors import KitError
    from launcher.filestore import locked

    line = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries).encode()
    try:
        os.makedirs(_index_dir(), mode=0o700, exist_ok=True)
        with locked(os.path.join(_index_dir(), _ENTRIES_LOCK)):
            fd = os.open(
                os.path.join(_index_dir(), ENTRIES), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600
            )
            try:
                while line:  # under the lock, to a file opened for appending: after every other writer's
                    line = line[os.write(fd, line) :]
            finally:
                os.close(fd)
    except (OSError, KitError):
        pass


def entries() -> dict:
    """record path -> its latest entry. Rewrites the file without superseded lines when they are too many."""
    path = os.path.join(_index_dir(), ENTRIES)
    found, lines, seen = _read_entries(path)
    if lines > 2 * len(found) + _SLACK:
        _compact(path, found, seen)
    return found


def _read_entries(path: str) -> tuple[dict, int, tuple]:
    """(record path -> entry, lines read, the file read: its inode and size)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            raw = f.read()
    except OSError:
        return {}, 0, ()
    lines = raw.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    try:  # all at once, as one JSON list: ~3x faster than line by line
        parsed = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:  # a line cut short (a full disk), or damaged: the others still count
        parsed = []
        for line in lines:
            try:
                parsed.append(json.loads(line))
            except ValueError:
                continue
    found: dict = {}
    for entry in parsed:
        if _well_formed(entry):
            found[entry["path"]] = entry
    return found, len(lines), (st.st_ino, len(raw))


_SHAPE: dict[str, type | tuple[type, ...]] = {
    "path": str,
    "id": str,
    "kind": str,
    "backend": str,
    "state": str,
    "created": (int, float),
    "sig": list,
}


def _well_formed(entry) -> bool:
    """An entry with the fields a listing sorts and shows, of their types; any other line is skipped (its record
    is read again when listed, and its entry written anew)."""
    if not isinstance(entry, dict):
        return False
    for key, kind in _SHAPE.items():
        if not isinstance(entry.get(key), kind):
            return False
    return entry["path"].endswith("/" + entry["id"])


def _compact(path: str, found: dict, seen: tuple) -> None:
    """Rewrite the entries with one line per record that is still there, under the lock appenders take: `found`,
    read from the file `seen`, unless lines came (or the file was rewritten) since, then the file as it is now."""
    from launcher.errors import KitError
    from launcher.filestore import locked, write_atomic

    try:
        with locked(os.path.join(_index_dir(), _ENTRIES_LOCK)):
            st = os.stat(path)
            if (st.st_ino, st.st_size) != seen:
                found, _, _ = _read_entries(path)
            kept = [e for p, e in found.items() if os.path.isdir(p)]
            write_atomic(path, "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in kept))
            os.chmod(path, 0o600)
    except (OSError, KitError):
        pass


def linked() -> dict:
    """run id -> the absolute record path its link names, for every link in the index (records not checked)."""
    index = _index_dir()
    try:
        names = os.listdir(index)
    except OSError:
        return {}
    out = {}
    for name in names:
        if not name.startswith("."):
            try:
                target = os.readlink(os.path.join(index, name))
            except OSError:
                continue
            out[name] = target if target.startswith("/") else os.path.abspath(os.path.join(index, target))
    return out


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
        _forget(link)  # the record was deleted; a run root that is not there now (an unmounted disk) is kept
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


def taken(run_id: str, other: str, live: bool = True) -> tuple:
    """Where the namesake of `run_id` is and what to do, for the one-line refusal (text and Options, for a
    KitError): another id (one the index does not hold), or, while it is `live`, ending that run."""
    from launcher.errors import Option

    end = (f" (or end that one: kit cancel {run_id} ", Option("run_root", os.path.dirname(other)), ")") if live else ()
    return (f"at {other}; pick another ", Option("run_id"), f", e.g. {free_id(run_id)}", *end)


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
    roots: dict[str, None] = {}  # an ordered set
    for name in names:
        if name.startswith("."):
            continue
        target = where(name)
        if target is not None:
            roots.setdefault(os.path.dirname(target), None)
    return sorted(roots)


__all__ = ["kit_home", "remember", "where", "starting", "run_roots", "indexed", "note", "entries", "linked"]

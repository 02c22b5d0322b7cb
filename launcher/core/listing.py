"""`kit runs` over any number of records: rows from the index's entries (run_index.py), newest first, a page at a
time. A full record is read only for a run that may still be going (its backend says how it stands now), and for an
entry that is stale or missing (read again and written back: the next listing finds it up to date). Where the
records are is what it always was: every record in ./runs and in each run root the index names (or under
--run-root only); a directory's listing says which records there are, its entries what they hold."""

import logging
import heapq
import os
from typing import Callable, Optional

from launcher import records, run_index
from launcher.core.lookup import DEFAULT_ROOT, UNTRUSTED, resolve_id, root_of, state_now
from launcher.errors import KitError
from launcher.filestore import locked
from launcher.states import ACTIVE, NOT_OVER, QUEUED, RunState
from launcher.trust import untrusted

log = logging.getLogger(__name__)

PAGE = 50  # rows `kit runs` shows unless told --all or --limit


def read_entry(path: str) -> Optional[dict]:
    """The entry of the record (a run's or a sweep's) at `path`, read in full; None when there is none. An
    unreadable sweep record costs one warning line naming its file (as ever), never the listing."""
    for name in (records.STATUS, records.SWEEP_FILE):
        try:
            st = os.stat(os.path.join(path, name))
        except OSError:
            continue
        if name == records.STATUS:
            record = records.RunRecord(path)
            return record.index_entry(record.read_status(), st)
        reader = run_index.KIND_READERS.get(name)
        if reader is None:  # sweeps/record.py not imported: a listing of runs only
            return None
        try:
            return reader[0](path, st)
        except KitError as e:
            log.warning(f"kit: warning: {e}")
    return None


def entry_under_lock(path: str) -> Optional[dict]:
    """read_entry() under the record's lock, that every writer of it takes (run_index.remember)."""
    try:
        with locked(os.path.join(path, records.LOCK)):
            return read_entry(path)
    except (OSError, KitError):
        return None


def _roots(run_root: Optional[str]) -> list[str]:
    """The directories to list, each once: `run_root`, else every run root the index names, then ./runs."""
    if run_root is not None:
        return [run_root]
    named = dict.fromkeys(os.path.dirname(p) for p in run_index.linked().values())
    roots: dict = {}
    for root in [*named, DEFAULT_ROOT]:
        if os.path.isdir(root):
            roots.setdefault(os.path.realpath(root), os.path.abspath(root))
    return list(roots.values())


def _found(run_root: Optional[str], kinds: tuple, repaired: list) -> list[dict]:
    """The entries of every record under the roots (run_root, else all of this user's), as the index has them
    (not checked against the records yet); a record with none is read in full and its entry goes to `repaired`."""
    cache = run_index.entries()
    out = []
    for root in _roots(run_root):
        try:
            names = os.listdir(root)
        except OSError:
            continue
        base = os.path.abspath(root)
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(base, name)
            entry = cache.get(path)
            if entry is None:
                entry = read_entry(path)
                if entry is None:
                    continue
                repaired.append(entry)
            if entry.get("kind") in kinds:
                out.append(entry)
    return out


def _fresh(entry: dict, repaired: list) -> Optional[dict]:
    """`entry` if it still says what its record's file holds (same signature), else the record read again (None
    when it is gone)."""
    name = records.STATUS if entry.get("kind") == "run" else records.SWEEP_FILE
    try:
        if records.signature(os.stat(os.path.join(entry["path"], name))) == entry.get("sig"):
            return entry
    except OSError:
        pass
    new = read_entry(entry["path"])
    if new is not None:
        repaired.append(new)
    return new


def _row(entry: dict, now: float) -> dict:
    """A listing's row for a checked entry: the state now (a run that may still be going asked of its backend; a
    record kit will not act on is `untrusted`), and its duration."""
    path, state = entry["path"], entry["state"]
    start, end, code, job_id = entry.get("began"), entry.get("finished"), entry.get("exit"), entry.get("job_id")
    if entry["kind"] == "sweep":
        if state == RunState.RUNNING:
            reader = run_index.KIND_READERS.get(records.SWEEP_FILE)
            try:
                state = reader[1](path) if reader is not None else state
            except KitError:
                pass
        end = end or (now if state == RunState.RUNNING else None)
    else:
        record = records.RunRecord(path)
        if state in NOT_OVER:
            st = record.read_status()
            state, _ = state_now(record, st)
            start, end, code, job_id = st.began, st.finished_at, st.exit_code, st.scheduler_job_id
        elif state != RunState.CORRUPT and untrusted(record) is not None:
            state = UNTRUSTED
        if state in ACTIVE + QUEUED:
            end = now
    return {
        "id": entry["id"],
        "path": path,
        "job": entry.get("job", ""),
        "backend": entry["backend"],
        "state": str(state),
        "exit": code,
        "created": entry.get("created") or 0,
        "started": start,
        "duration": (end - start) if start and end else None,
        "job_id": job_id,
        "owner": entry.get("owner"),
    }


def listing(
    run_root: Optional[str],
    now: float,
    keep: Optional[Callable[[dict], bool]] = None,
    limit: Optional[int] = PAGE,
    kinds: tuple = ("run", "sweep"),
    rows: bool = True,
) -> tuple[list, int]:
    """(rows, how many rows there are in all): the newest `limit` rows (None: every one) that `keep` keeps, newest
    first, of the records under `run_root` (None: all of this user's). Without `keep`, only the rows shown are
    checked against their records; with it, every one is (a filter must not miss a run whose entry is stale).
    `rows` False: the checked entries themselves, no state asked of any backend."""
    row = (lambda e: _row(e, now)) if rows else (lambda e: e)
    repaired: list = []
    found = _found(run_root, kinds, repaired)
    try:
        if keep is not None or limit is None:
            out = [row(e) for e in (_fresh(e, repaired) for e in found) if e is not None]
            out = [r for r in out if keep is None or keep(r)]
            out.sort(key=lambda r: r["created"], reverse=True)
            return (out if limit is None else out[:limit]), len(out)
        heap = [(-(e.get("created") or 0), i, e) for i, e in enumerate(found)]
        heapq.heapify(heap)
        out, total, n = [], len(found), len(found)
        while heap and len(out) < limit:
            created, _, entry = heapq.heappop(heap)
            fresh = _fresh(entry, repaired)
            if fresh is None:
                total -= 1
            elif -(fresh.get("created") or 0) != created:  # read again, it sorts elsewhere
                n += 1
                heapq.heappush(heap, (-(fresh.get("created") or 0), n, fresh))
            else:
                out.append(row(fresh))
        return out, total
    finally:
        if repaired:
            run_index.note(*repaired)


def record_paths(run_root: Optional[str]) -> list[str]:
    """Every run record under `run_root` (None: all of this user's), oldest first."""
    repaired: list = []
    found = _found(run_root, ("run",), repaired)
    if repaired:
        run_index.note(*repaired)
    return [e["path"] for e in sorted(found, key=lambda e: e.get("created") or 0)]


def newest_run(run_root: Optional[str]) -> Optional[str]:
    """The record path of the newest run under `run_root` (None: of all this user's), or None."""
    rows, _ = listing(run_root, 0.0, limit=1, kinds=("run",), rows=False)
    return rows[0]["path"] if rows else None


def latest_run(run_root: Optional[str]) -> tuple[str, Optional[str]]:
    """(run root, id) of the newest run under `run_root`, or of all this user's runs when None."""
    path = newest_run(run_root)
    if path is None:
        return run_root or DEFAULT_ROOT, None
    return (run_root if run_root is not None else os.path.dirname(path)), os.path.basename(path)


def find_record(
    run_root: Optional[str], run_id: Optional[str], *, how=("`kit submit`", "see `kit runs`, or give --run-root DIR")
) -> records.RunRecord:
    """The record of `run_id` (the latest run when None) under `run_root` (None: wherever kit's index says, else
    ./runs); a one-line KitError when none. `how`: what the error tells its reader to do (the CLI's words by
    default; the Python API's are its own)."""
    start, find = how
    run_id = resolve_id(run_root, run_id)
    if run_id is None:
        run_root, run_id = latest_run(run_root)
        if run_id is None:
            where = f"under {run_root}/" if run_root != DEFAULT_ROOT else "yet"
            raise KitError(f"no runs {where}; start one with {start}")
    given = run_root is not None
    root = root_of(run_root, run_id)
    try:
        return records.find(root, run_id)
    except KitError:
        if given:
            raise
        raise KitError(
            f"run {run_id}: no record in kit's index ({run_index.kit_home()}/index) or under {DEFAULT_ROOT}/; {find}"
        ) from None

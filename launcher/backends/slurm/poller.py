"""One poller per place the SLURM commands run, shared by every follower in this kit process (a followed run, a
sweep's array tasks, a cancel's wait): one batched `squeue` for every job id it watches, `scontrol`/sacct only
for an id squeue no longer knows or a job seen ending (its exact exit code), once. It asks again at once when it
is new to a job or nudged (a node wrote its exit file, kit sent scancel or a requeue), then backs off while
nothing changes, from FAST to SLOW: at most one scheduler query per SLOW seconds once steady, however many jobs.
A state change seen goes back to FAST. Each call to slurmctld is an RPC; a shared controller rate-limits users."""

import logging
import threading
import time
from typing import Iterable, Optional

from launcher.backends.slurm.query import QUERY_TIMEOUT, JobInfo, query, started_from
from launcher.transport.where import CommandError

log = logging.getLogger(__name__)
FAST = 1.0
SLOW = 5.0
# squeue's fields, '|'-separated (no field holds '|'): --array lists each array task on its own row.
_FORMAT = "JobArrayID:|,State:|,RestartCnt:|,Reason:|,NodeList:|,TimeUsed:|"


def squeue_jobs(where, job_ids: list[str]) -> Optional[dict]:
    """job id -> JobInfo for each id the controller still knows, in ONE squeue call; None when squeue could not
    be asked. An id it does not know is absent (squeue with one unknown id fails "Invalid job id")."""
    argv = ["squeue", f"--jobs={','.join(job_ids)}", "--states=all", "--noheader", "--array", f"--Format={_FORMAT}"]
    asked = time.time()
    try:
        r = where.run(argv, timeout=QUERY_TIMEOUT)
    except CommandError:
        return None
    if r.code != 0:
        return {} if "invalid job id" in (r.err + r.out).lower() else None
    found = {}
    for line in r.out.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 6 or cells[0] not in job_ids:
            continue
        job, state, restarts, reason, nodes, used = cells[:6]
        found[job] = JobInfo(
            job,
            state.split()[0],
            reason=reason,
            nodes=nodes,
            restarts=int(restarts) if restarts.isdigit() else 0,
            from_controller=True,
            started_at=started_from(used, asked) if state.startswith("RUNNING") else None,
        )
    return found


def _moves(info: JobInfo) -> tuple:
    """What a change of which resets the backoff (not the time used, which changes at every query)."""
    return info.slurm_state, info.restarts, info.reason, info.nodes, info.forgotten


class Poller:
    """Thread-safe: the thread whose call finds the answer due asks for every watched job; the others wait on
    the lock and read that answer."""

    def __init__(self, where) -> None:
        self.where = where
        self._lock = threading.Lock()
        self._watched: set = set()
        self._infos: dict = {}
        self._interval = FAST
        self._due = 0.0
        self.queries = 0  # batched rounds made (for tests and the bench)

    def watch(self, job_ids: Iterable[str]) -> None:
        """Follow these too: the next round asks for them with the others (none asked for now)."""
        with self._lock:
            self._watched.update(job_ids)

    def forget(self, job_id: str) -> None:
        with self._lock:
            self._watched.discard(job_id)
            self._infos.pop(job_id, None)

    def nudge(self) -> None:
        """Something moved (an exit file, a scancel, a requeue): the next call asks SLURM, then FAST again."""
        with self._lock:
            self._due, self._interval = 0.0, FAST

    def info(self, job_id: str) -> JobInfo:
        """What SLURM said of the job at the last round; a new round first when one is due or the job is new."""
        with self._lock:
            self._watched.add(job_id)
            if job_id not in self._infos or time.monotonic() >= self._due:
                self._round()
            return self._infos[job_id]

    def _round(self) -> None:
        ids = sorted(self._watched)
        self.queries += 1
        rows = squeue_jobs(self.where, ids)
        changed = False
        for job_id in ids:
            old = self._infos.get(job_id)
            row = None if rows is None else rows.get(job_id)
            if rows is None and old is not None:
                continue  # the controller did not answer: what it said last stands, asked again later
            if row is None:
                # squeue does not know it (any more): scontrol then accounting, once; a job kit saw end stays ended.
                new = old if old is not None and old.finished else query(self.where, job_id)
            elif row.finished:
                # Its end: scontrol's exact exit code, asked once per end (not again while squeue says the same).
                same = old is not None and old.finished and _moves(old)[:2] == _moves(row)[:2]
                new = old if same else query(self.where, job_id)
            else:
                new = row
            changed = changed or old is None or _moves(old) != _moves(new)
            self._infos[job_id] = new
        self._interval = FAST if changed else min(self._interval * 2, SLOW)
        self._due = time.monotonic() + self._interval
        log.debug(
            "kit: debug: SLURM poll %d (%s): %s; next in %g s",
            self.queries,
            self.where.where,
            ", ".join(f"{j} {self._infos[j].slurm_state}" for j in ids),
            self._interval,
        )


_POLLERS: dict = {}
_POLLERS_LOCK = threading.Lock()


def poller(where) -> Poller:
    """This process's poller for the place `where` runs SLURM's commands (this machine, or one login host)."""
    key = (bool(where.remote), where.where)
    with _POLLERS_LOCK:
        if key not in _POLLERS:
            _POLLERS[key] = Poller(where)
        return _POLLERS[key]

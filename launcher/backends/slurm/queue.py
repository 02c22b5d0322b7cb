"""What SLURM says about a job and how kit reads it: `scontrol`, `squeue` and sacct's answers as a JobInfo, SLURM's
states mapped through one table (SLURM_STATES), and the one poller per place the SLURM commands run, shared by
every follower in this kit process (a followed run, a sweep's array tasks, a cancel's wait): one batched `squeue`
for every job id it watches, `scontrol`/sacct only for an id squeue no longer knows or a job seen ending (its
exact exit code), once. It asks again at once when it is new to a job or nudged (a node wrote its exit file, kit
sent scancel or a requeue), then backs off while nothing changes, from FAST to SLOW: at most one scheduler query
per SLOW seconds once steady, however many jobs. A state change seen goes back to FAST. Each call to slurmctld is
an RPC; a shared controller rate-limits users."""

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Optional

from launcher.states import RunState
from launcher.transport.where import CommandError, Local

# What SLURM says about a job: `scontrol show job` while the controller still knows the job (state, reason, nodes,
# requeues, exit code), sacct once it has forgotten it; and when neither knows it (no accounting, the job past
# MinJobAge), `forgotten`: the job has ended, and the exit files the nodes wrote say how (follow.py). Every command
# runs where transport/where.py says: this machine or the login host.

QUERY_TIMEOUT = 20.0
_FIELD = re.compile(r"(\w+)=(\S*)")
# SLURM's job states -> kit's run states: the one table (PENDING is `requeued` once the job has run before).
SLURM_STATES = {
    "PENDING": RunState.PENDING,
    **dict.fromkeys(("REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "PREEMPTED"), RunState.REQUEUED),
    **dict.fromkeys(
        ("RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING", "STAGE_OUT"),
        RunState.RUNNING,
    ),
    "COMPLETED": RunState.SUCCEEDED,
    "CANCELLED": RunState.CANCELLED,  # also "CANCELLED by <uid>"
    "TIMEOUT": RunState.TIMEOUT,
    **dict.fromkeys(("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"), RunState.FAILED),
}


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    slurm_state: str  # SLURM's word (RUNNING, PENDING, COMPLETED, ...), UNKNOWN when nobody knows
    reason: str = ""
    nodes: str = ""
    restarts: int = 0
    exit_code: Optional[int] = None  # the batch script's, when SLURM reported it
    # The controller says the job id is invalid (it forgot the job, which it does only once a job has ended) and
    # accounting cannot say either: the run directory's exit files decide how it ended.
    forgotten: bool = False
    # The controller's word (scontrol), not accounting's: only it counts requeues, and accounting can still show a
    # requeued job's previous end for a while.
    from_controller: bool = False
    started_at: Optional[float] = None  # when the running job started, on kit's clock (now - its RunTime)

    @property
    def kit_state(self) -> Optional[RunState]:
        """SLURM's state as kit's (SLURM_STATES); None when SLURM's word is not one kit knows (UNKNOWN: nobody
        knows the job)."""
        state = SLURM_STATES.get((self.slurm_state or "").split(" ")[0].rstrip("+"))
        if state is RunState.PENDING and self.restarts:
            return RunState.REQUEUED
        return state

    @property
    def finished(self) -> bool:
        return self.kit_state is not None and self.kit_state.is_terminal


def _run(where, argv: list[str]) -> Optional[str]:
    try:
        r = where.run(argv, timeout=QUERY_TIMEOUT)
    except CommandError:
        return None
    return r.out if r.code == 0 else None


def _exit_code(text: str) -> Optional[int]:
    """SLURM's "code:signal": a signal reads as 128 + signal, like a shell says it."""
    m = re.match(r"^(\d+):(\d+)$", text or "")
    if not m:
        return None
    code, sig = int(m.group(1)), int(m.group(2))
    return 128 + sig if sig else code


def scontrol_job(where, job_id: str) -> tuple[dict, bool]:
    """(`scontrol show job -o` as a dict, whether the controller said it does not know the job id). ({}, False)
    when it could not be asked at all (a controller that does not answer forgets nothing)."""
    try:
        r = where.run(["scontrol", "show", "job", "-o", job_id], timeout=QUERY_TIMEOUT)
    except CommandError:
        return {}, False
    if r.code == 0 and r.out.strip():
        return dict(_FIELD.findall(r.out.splitlines()[0])), False
    return {}, "invalid job id" in (r.err + r.out).lower()


def sacct_state(job_id: str) -> str:
    """The job's state in accounting, asked on this machine; UNKNOWN without accounting or a row yet."""
    return Local().accounting_state(job_id)


def query(where, job_id: str) -> JobInfo:
    """`where`: transport.where.Local or LoginHost, where the SLURM commands run."""
    asked = time.time()  # before the answer: the controller's RunTime was counted at or after this
    fields, invalid = scontrol_job(where, job_id)
    # sacct lags the controller (a final row can appear before its exit code and end time) and costs more on a
    # busy login node: while the controller still knows the job, its word is used; sacct answers once the
    # controller has forgotten it (MinJobAge, 300 s by default).
    state = fields.get("JobState", "") or where.accounting_state(job_id)
    code = _exit_code(fields.get("ExitCode", "")) if fields else _exit_code(_sacct_field(where, job_id, "ExitCode"))
    return JobInfo(
        job_id,
        state.split()[0],
        reason=fields.get("Reason", ""),
        nodes=fields.get("NodeList", ""),
        restarts=int(fields.get("Restarts", "0") or 0),
        exit_code=code,
        forgotten=invalid and state == "UNKNOWN",
        from_controller=bool(fields),
        started_at=started_from(fields.get("RunTime", ""), asked) if state.startswith("RUNNING") else None,
    )


def started_from(run_time: str, asked: float) -> Optional[float]:
    """The earliest the job can have started: `asked` (when kit asked) - scontrol's RunTime ("[days-]hh:mm:ss";
    squeue's TimeUsed drops leading zero fields: "m:ss", "h:mm:ss"; whole seconds, cut down) - 1 s, so the start
    is never after what the job's processes did (CI saw "process started" before "attempt started" with
    `now - RunTime`). A duration, so neither the controller's time zone nor its clock (StartTime is printed in the
    zone of the host that runs scontrol) moves it."""
    m = re.match(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d\d)$", run_time or "")
    if not m:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in m.groups())
    return asked - (((days * 24 + hours) * 60 + minutes) * 60 + seconds) - 1


def _sacct_field(where, job_id: str, field: str) -> str:
    out = _run(where, ["sacct", "-n", "-X", "-P", "-j", job_id, "-o", field])
    rows = [r for r in (out or "").splitlines() if r.strip()]
    return rows[-1].strip() if rows else ""


def hostnames(where, nodelist: str) -> list[str]:
    out = _run(where, ["scontrol", "show", "hostnames", nodelist]) if nodelist and nodelist != "(null)" else None
    return out.split() if out else []


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

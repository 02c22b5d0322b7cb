"""What SLURM says about a job: `scontrol show job` while the controller still knows the job (state, reason,
nodes, requeues, exit code), sacct once it has forgotten it; and when neither knows it (no accounting, the job
past MinJobAge), `forgotten`: the job has ended, and the exit files the nodes wrote say how (outcome.py). Every
command runs where transport/where.py says: this machine or the login host."""

import re
import time
from dataclasses import dataclass
from typing import Optional

from launcher.transport.where import CommandError, Local
from launcher.states import RunState

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

"""What the job leaves in its run directory on the cluster's workdir, read wherever that is (transport/where.py): each
node's exit code (`node<N>.exit`), the node logs, and the batch shell's own output (`slurm-<job id>.out`).

The run record (status.json, plan.json) stays on the submitting machine. When the workdir is elsewhere (a login
host), the node logs are copied into the record as they grow, so following, `kit logs` and the failure summary
read them as they read any other backend's logs."""

import fcntl
import os
import re
from typing import Optional

from launcher.render.slurm import node_exit_file
from launcher.status import RunStatus
from launcher.transport.where import CommandError

_NODE_LOG = re.compile(r"^node\d+\.log$")
_NODE_EXIT = re.compile(r"^node\d+\.exit$")
# What the plan's batch shell says (render/slurm.py) when the requeue budget is spent; a pure test checks that
# the rendered script still says it.
TIME_LIMIT_NO_REQUEUE = "kit: time limit near, no requeue left"
REQUEUES_EXHAUSTED = "more than slurm.max_requeues="
ATTEMPT_STARTED = "kit: attempt {n} after "  # the batch shell's first words in a requeued attempt


def this_attempts_output(batch_text: str, restarts: int) -> Optional[str]:
    """What the batch shell wrote in the attempt after `restarts` requeues (a requeued job appends to one file), or
    None when that attempt's shell never ran."""
    if restarts == 0:
        return batch_text
    at = batch_text.rfind(ATTEMPT_STARTED.format(n=restarts + 1))
    return None if at < 0 else batch_text[at:]


def run_dir_on_cluster(status: RunStatus) -> str:
    return os.path.join(status.handle.workdir, status.handle.run_dir)


def confine(record, status) -> None:
    """Without a login host the record is the run directory on the workdir: the paths its status names (workdir,
    run_dir), from which kit reads exit codes and copies logs, must lead back to it, never elsewhere."""
    from launcher.errors import RecordError

    if not status.handle.workdir or not status.handle.run_dir or not os.path.isabs(status.handle.workdir):
        raise RecordError(
            f"run record {record.path}: no absolute workdir and run_dir recorded; kit will not read "
            f"the job's files from elsewhere",
            path=record.path,
        )
    if os.path.realpath(run_dir_on_cluster(status)) != os.path.realpath(record.path):
        raise RecordError(
            f"run record {record.path} names its run directory as {run_dir_on_cluster(status)}, "
            f"not itself; kit will not read or copy files from there",
            path=record.path,
        )


def _exit_path(status, rank: int) -> str:
    return os.path.join(status.handle.workdir, node_exit_file(status.handle.run_dir, str(rank)))


def node_exit_codes(where, status: dict, n_nodes: int) -> list[Optional[int]]:
    """Each node's exit code as its command wrote it (None: not written, e.g. killed by SIGKILL)."""
    codes = []
    for rank in range(n_nodes):
        text = where.read(_exit_path(status, rank))
        try:
            codes.append(int(text.decode().strip()) if text is not None else None)
        except ValueError:
            codes.append(None)
    return codes


def exits_written(where, status) -> int:
    """How many nodes wrote their exit file so far: one listing of the run directory (a job whose node ended is
    asked about at once, not at the poller's next round)."""
    try:
        return sum(1 for n in where.listdir(run_dir_on_cluster(status)) if _NODE_EXIT.match(n))
    except (OSError, CommandError):
        return 0


def clear_node_exit_codes(where, status) -> None:
    """Remove the exit codes an attempt left (before kit requeues the job): an attempt whose nodes never ran then
    reads as such, not as the last one's end. Best effort: stale codes are read only if no node writes its own."""
    try:
        where.run(["rm", "-f", "--", *(_exit_path(status, n) for n in range(len(status.nodes)))], timeout=60.0)
    except CommandError:
        pass


def exit_file_mtime(where, status: dict, rank: int) -> float:
    t = where.mtime(_exit_path(status, rank))
    return float("inf") if t is None else t


def batch_output(where, status: RunStatus) -> str:
    """The batch shell's output (#SBATCH --output=<run_dir>/slurm-%j.out), "" when there is none (yet)."""
    data = where.read(os.path.join(run_dir_on_cluster(status), f"slurm-{status.handle.job_id}.out"))
    return (data or b"").decode("utf-8", errors="replace")


def copy_node_logs(where, status, record_path: str) -> None:
    """Append to the record's node<N>.log what the job wrote past it; nothing when the record is the run dir.
    The local file's size is the offset already copied; a lock keeps two kit processes from copying twice. A copy
    that cannot be written (a full disk) is left for the next call: the job is not affected."""
    remote = run_dir_on_cluster(status)
    if not where.remote and os.path.realpath(remote) == os.path.realpath(record_path):
        return
    for name in sorted(n for n in where.listdir(remote) if _NODE_LOG.match(n)):
        try:
            with open(os.path.join(record_path, name), "ab") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    start = f.seek(0, os.SEEK_END)
                    data = where.read(os.path.join(remote, name), offset=start)
                    if data:
                        try:
                            f.write(data)
                        except OSError:
                            f.truncate(start)  # never half a copy: the next call copies from here again
                            raise
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
        except OSError:
            continue

"""Following a SLURM job to its end: the files it leaves in its run directory (node exit codes, node logs, the batch
shell's output), its queue state as SLURM says it, the node logs shown as they grow, the world and hang watches,
the attempts the queue ended by itself (requeues), and how it ended: the record's final fields and failure line."""

import dataclasses
import fcntl
import json
import logging
import os
import re
import time
from typing import Optional

from launcher.backends.slurm.queue import JobInfo, hostnames, poller
from launcher.errors import KitError
from launcher.insight.watch import InsightWatch
from launcher.planning.model import LaunchPlan
from launcher.preflight.reach import reach_command, reach_problem
from launcher.preflight.stacks import dump_command, parse_dumps
from launcher.records import RunRecord
from launcher.render.slurm import node_exit_file
from launcher.states import OVER, RunState
from launcher.status import NOT_STARTED, Failure, RunStatus
from launcher.supervise.failure import cause, known_codes, outcome_level, read_log, summarize
from launcher.supervise.hang import HangWatch
from launcher.supervise.log_lines import flush_held, node_logs, print_new_lines
from launcher.supervise.ranks_view import RanksView
from launcher.supervise.tracebacks import first_cause
from launcher.supervise.world import WorldWatch, ranks_started
from launcher.transport.where import CommandError

# What the job leaves in its run directory on the cluster's workdir, read wherever that is (transport/where.py):
# each node's exit code (`node<N>.exit`), the node logs, and the batch shell's own output (`slurm-<job id>.out`).
# The run record (status.json, plan.json) stays on the submitting machine. When the workdir is elsewhere (a login
# host), the node logs are copied into the record as they grow, so following, `kit logs` and the failure summary
# read them as they read any other backend's logs.

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


# How a SLURM run ended, and what its record says now: from SLURM's final state, the exit codes the nodes wrote into
# the run directory, the batch shell's output and the node logs (the same failure summary as every other backend).

SIGTERM_EXIT = 143


def describe(info: JobInfo) -> str:
    """One line about the job as SLURM sees it: state, reason while waiting, nodes while running, requeues."""
    text = f"SLURM job {info.job_id} {info.kit_state or info.slurm_state}"
    if info.kit_state in (RunState.PENDING, RunState.REQUEUED) and info.reason and info.reason != "None":
        text += f" ({info.reason})"
    if info.kit_state == RunState.RUNNING and info.nodes:
        text += f" on {info.nodes}"
    if info.restarts:
        text += f"; requeued {info.restarts} time(s)"
    return text


def _planned(record_path: str) -> dict:
    """The record's plan.json ({} when unreadable): node 0's argv (what the job runs decides what its exit codes
    mean) and the world (how many ranks each node's teed rank logs hold)."""
    try:
        with open(os.path.join(record_path, "plan.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _node_argv(plan: dict) -> list:
    try:
        return plan["nodes"][0]["argv"]
    except (KeyError, IndexError, TypeError):
        return []


def _first_failure(where, status, codes: list, record_path: str) -> Optional[Failure]:
    failed = [i for i, c in enumerate(codes) if c]
    if not failed:
        return None
    # The node that ended first failed first; the others were stopped because of it (srun --kill-on-bad-exit),
    # unless its ranks only died of another node's rank's error (first_cause).
    order = sorted(failed, key=lambda i: (exit_file_mtime(where, status, i), i))
    hosts = [n.host for n in status.nodes]
    plan = _planned(record_path)

    def of(rank: int) -> Failure:
        # The rank's own teed stderr names its error reliably; the node log interleaves its stdout and stderr.
        return summarize(
            rank,
            hosts[rank] if rank < len(hosts) else "?",
            codes[rank],
            read_log(os.path.join(record_path, f"node{rank}.log")),
            known_codes(_node_argv(plan)),
            ranks_dir=os.path.join(record_path, f"node{rank}.ranks"),
            procs_per_node=plan.get("world", {}).get("procs_per_node", 1),
        )

    return first_cause([of(rank) for rank in order])


def settle(where, status, info: JobInfo) -> JobInfo:
    """A job SLURM has forgotten (the controller says its id is invalid, no accounting knows it) has ended: the
    exit code each node's command wrote into the run directory says how. Without them all, it failed (a node was
    killed, or the job was cancelled before it ran)."""
    if not info.forgotten:
        return info
    codes = node_exit_codes(where, status, len(status.nodes))
    if codes and all(c is not None for c in codes):
        bad = [c for c in codes if c]
        return dataclasses.replace(info, slurm_state="FAILED" if bad else "COMPLETED", exit_code=bad[0] if bad else 0)
    return dataclasses.replace(info, slurm_state="FAILED", exit_code=next((c for c in codes if c), None))


def budget_spent(batch_text: str) -> Optional[RunState]:
    """The state a job ends in when its requeue budget was spent, from what its batch shell said, else None.

    The time-limit warning with no requeue left stops the ranks (they checkpoint): the job ran out of time, as
    SLURM's own TIMEOUT says when it kills a job at its limit, and nothing will bring it back, so `timeout`, not
    `preempted` (which promises a requeue) and not `failed` (nothing went wrong). A job requeued from outside
    (preemption) more often than allowed stops before launching: `preempted`, its last checkpoint kept."""
    if TIME_LIMIT_NO_REQUEUE in batch_text:
        return RunState.TIMEOUT
    if REQUEUES_EXHAUSTED in batch_text:
        return RunState.PREEMPTED
    return None


def final_fields(where, status, info: JobInfo, record_path: str, ran: bool = True) -> dict:
    """The record's fields for a finished job: state, exit code, per-node codes and the first failure. `ran`:
    whether kit saw this attempt running (False: it may have ended before any node's command started)."""
    codes = node_exit_codes(where, status, len(status.nodes))
    state = info.kit_state
    failure, ended_by = None, ""
    if state == RunState.SUCCEEDED:
        code = 0
    elif state == RunState.CANCELLED:
        code = info.exit_code or SIGTERM_EXIT
    else:
        batch = batch_output(where, status)
        spent = budget_spent(batch)
        failure = _first_failure(where, status, codes, record_path)
        if (
            failure is None
            and not ran
            and state == RunState.FAILED
            and not info.forgotten
            and codes
            and all(c is None for c in codes)
        ):
            failure = _not_started(status, info, batch)
        code = failure.code if failure is not None else (info.exit_code or 1)
        if spent is not None:
            # Not a failure: the ranks were stopped on purpose. The code stays theirs (75: resumable).
            state, failure, ended_by = spent, None, _ended_by(spent, status)
        elif failure is not None and failure.preempted and state == RunState.FAILED:
            state = RunState.PREEMPTED
    if info.forgotten and not ended_by:
        missing = [str(i) for i, c in enumerate(codes) if c is None]
        ended_by = f"SLURM no longer knows job {info.job_id} and has no accounting; read from the nodes' exit files" + (
            f" (node(s) {', '.join(missing)} wrote none: killed, or never started)" if missing else ""
        )
    return {
        "state": state,
        "exit_code": code,
        "node_exit_codes": codes,
        "restarts": info.restarts,
        "slurm_state": info.slurm_state,
        "failure": failure,
        "ended_by": ended_by,
    }


def _not_started(status, info: JobInfo, batch: str) -> Failure:
    """The job ended before any node's command ran (kit never saw it running, no node wrote its exit code: each
    node's wrapper removes its file first, and kit removes them before it requeues): SLURM's own words, from this
    attempt's output (srun's `error:` line, e.g. a task launch refused), else its state and reason (a batch shell that
    never ran leaves only the controller's log to say why: "Job credential revoked"). Not the job's verdict: a
    restart may follow."""
    mine = this_attempts_output(batch, info.restarts)
    said = [ln.strip() for ln in (mine or "").splitlines() if "error:" in ln]
    out = os.path.join(status.handle.run_dir or "", f"slurm-{info.job_id}.out")
    why = (
        f"{said[-1]} (in {out})"
        if said
        else f"state {info.slurm_state}, reason {info.reason or 'none given'}; the controller's log says why"
    )
    hosts = [n.host for n in status.nodes]
    return Failure(
        0,
        hosts[0] if hosts else "?",
        None,
        info.exit_code or 1,
        NOT_STARTED,
        f"SLURM ended job {info.job_id} before any node's command ran: {why}",
    )


def _ended_by(state: str, status) -> str:
    limit = status.handle.max_requeues
    budget = f" (slurm.max_requeues={limit})" if limit is not None else ""
    if state == RunState.TIMEOUT:
        return (
            f"the time limit came with no requeue left{budget}; the ranks got SIGTERM to checkpoint and stop. "
            "Resubmit (the training module's --resume auto continues from the checkpoint) or raise slurm.time"
        )
    return f"requeued more often than allowed{budget}; resubmit to continue from the last checkpoint"


def failure_of(fields: dict) -> Optional[Failure]:
    return fields.get("failure")


def with_kits_verdict(current, fields: dict) -> dict:
    """`fields` (final_fields of a finished job) as the record `current` lets them stand: a job that ended
    cancelled because kit's own watch cancelled it (`current.stopping`, written before the scancel) ended with that
    watch's verdict, whether the follower, a `kit status` or a `kit cancel` in another shell reads its end first.
    Called under the record's lock (RunRecord.amend), so no reader can have missed the marker."""
    f = current.stopping
    if f is None or fields.get("state") != RunState.CANCELLED:
        return fields
    return {**fields, "state": RunState.FAILED, "exit_code": f.code, "failure": f, "ended_by": ""}


def record_end(record, fields: dict) -> dict:
    """A finished job's end in its record, with kit's own verdict where a watch cancelled it: the fields as applied
    (what the follower, `kit status` and `kit cancel` report)."""
    ended, applied = time.time(), {}

    def change(current):
        applied.update(with_kits_verdict(current, fields))
        return {**applied, "finished_at": ended}

    record.amend(change, attempt_end=True)  # held while kit's restart loop may requeue the job
    return applied


# Attempts the queue ended by itself. A SLURM job requeued without kit (preemption, `scontrol requeue`, the batch
# shell's own requeue at the time-limit warning) starts a new attempt that kit's restart loop never saw: the
# follower lists each ended one among the run's attempts, so `kit status` shows it and it counts against the job's
# `restarts` budget like kit's own restarts (backends/attempts.py).

TIME_LIMIT_REQUEUE = "kit: time limit near: requeueing"  # render/slurm.py's trap says it; a test keeps them one
BY_TIME_LIMIT = "time limit near: the batch shell requeued the job"
BY_QUEUE = "requeued by SLURM (preemption or scontrol requeue)"


def _output_of(batch_text: str, attempt: int) -> Optional[str]:
    """What the batch shell wrote in attempt `attempt` (1-based), up to the next attempt's first words."""
    text = this_attempts_output(batch_text, attempt - 1)
    if text is None:
        return None
    end = text.find(ATTEMPT_STARTED.format(n=attempt + 1))
    return text if end < 0 else text[:end]


def requeued_attempts(current: RunStatus, restarts: int, batch_text: str, now: float) -> dict:
    """The fields that list the attempts ended by requeues the record does not hold yet ({} when it holds them
    all: kit's own restarts are listed by its loop before it requeues)."""
    attempts = list(current.attempts)
    while len(attempts) < restarts:
        n = len(attempts) + 1
        said = _output_of(batch_text, n) or ""
        started = attempts[-1].get("finished_at") if attempts else current.started_at
        attempts.append(
            {
                "attempt": n,
                "started_at": started,
                "finished_at": now,
                "state": RunState.REQUEUED,
                "exit_code": None,
                "cause": BY_TIME_LIMIT if TIME_LIMIT_REQUEUE in said else BY_QUEUE,
            }
        )
    return {"attempts": attempts} if len(attempts) > len(current.attempts) else {}


__all__ = ["requeued_attempts", "BY_QUEUE", "BY_TIME_LIMIT"]


log = logging.getLogger(__name__)
POLL = 1.0  # the watches' and the logs' tick; SLURM itself is asked through the poller, which backs off
REACH_TIMEOUT = 60.0


def follow(where, workdir: str, plan: LaunchPlan, record: RunRecord, requeues: int = 0) -> dict:
    """Follow the job to its end. After kit requeued it (`requeues`: the count SLURM must show by then), an end
    counts once the controller shows that count or this attempt was seen running: a controller slow to answer
    leaves accounting's word, which can still be the previous attempt's end. SLURM is asked through this
    process's poller (one query for every job followed, backing off); a node's exit file asks it at once."""
    job_id = record.read_status().handle.job_id
    try:
        return _follow(where, workdir, plan, record, requeues)
    finally:
        poller(where).forget(job_id)


def _follow(where, workdir: str, plan: LaunchPlan, record: RunRecord, requeues: int) -> dict:
    status = record.read_status()
    polls, exits = poller(where), exits_written(where, status)
    # A requeued attempt's lines follow the last one's in the same logs: shown from where those end.
    offsets, said = (_log_ends(record.path) if requeues else {}), None
    pending: dict = {}  # print_new_lines' partial lines, per log
    noise: dict = {}  # its NoiseFilter per log
    view = RanksView(plan.run_id)  # later ranks' tracebacks and repeated warnings: in the node logs only
    watch, hang, insight, last_output = None, None, None, [time.monotonic()]
    stopped_by: Failure | None = None
    seen_running, attempt_restarts = False, requeues
    while True:
        written = exits_written(where, status)
        if written > exits:  # a node's command ended: the job may have, with it
            exits = written
            polls.nudge()
        info = settle(where, status, polls.info(status.handle.job_id))
        seen_running = seen_running or (info.kit_state == RunState.RUNNING and info.restarts >= requeues)
        if info.finished and not ends_this_attempt(info, requeues, seen_running):
            time.sleep(POLL)
            continue
        if describe(info) != said and not info.finished:
            said = describe(info)
            log.info(f"kit: {said}")
            status = note_info(where, record, info)
        copy_node_logs(where, status, record.path)
        if print_new_lines(record.path, None, offsets, pending, noise, view=view):
            last_output[0] = time.monotonic()
        if info.restarts > attempt_restarts and not info.finished:  # the queue requeued the job: a new world
            attempt_restarts, watch, hang, insight = info.restarts, None, None, None
        if info.kit_state == RunState.RUNNING and watch is None:  # the rendezvous clock starts when the job runs
            watch = _world_watch(where, workdir, plan, record)
            hang = HangWatch(
                plan,
                watch,
                lambda: last_output[0],
                lambda: _stacks(where, workdir, plan, record),
                record.path,
                named_host=lambda n: _host_of(record, n),
            )
            insight = InsightWatch(plan, record, watch, log.warning, lambda n: _host_of(record, plan.nodes[n]))
        if watch is not None and stopped_by is None and info.kit_state == RunState.RUNNING:
            assert hang is not None and insight is not None  # set with watch, above
            stopped_by = watch.poll() or hang.poll() or insight.poll()
            if stopped_by is not None:
                _cancel(where, record, status, stopped_by)
        if info.finished:
            flush_held(noise, view=view)
            status = note_info(where, record, info)  # the hosts of a job that ended before it was seen running
            fields = final_fields(where, status, info, record.path, ran=seen_running)
            if stopped_by is not None:
                fields.update(state=RunState.FAILED, exit_code=stopped_by.code, failure=stopped_by, ended_by="")
            fields = record_end(record, fields)
            # The run's end as kit reads it (SLURM says FAILED for a job whose time ran out at the warning).
            why = f": {fields['ended_by']}" if fields["ended_by"] else ""
            log.log(outcome_level(fields["state"]), f"kit: SLURM job {status.handle.job_id} {fields['state']}{why}")
            return fields
        time.sleep(POLL)


def _cancel(where, record: RunRecord, status: RunStatus, failure) -> None:
    """Cancel the job for a watch's verdict, marked first: a `kit status` in another shell that sees the job
    CANCELLED then records this verdict, not `cancelled` (with_kits_verdict). A scancel that fails leaves
    the job running and the run not over: said, and followed on (`kit cancel RUN` tries again)."""
    log.warning(f"kit: {cause(failure)}: cancelling SLURM job {status.handle.job_id}")
    record.update_status(stopping=failure)
    try:
        where.cancel(status.handle.job_id)
        poller(where).nudge()
    except (KitError, CommandError) as e:
        log.warning(
            f"kit: warning: could not cancel SLURM job {status.handle.job_id} ({e}); still following it "
            f"(kit cancel {status.run_id} tries again)"
        )


def _world_watch(where, workdir: str, plan: LaunchPlan, record: RunRecord):
    """Joined: the node's rank log directories on the shared workdir; reach: checked on the node's host in a
    step of its own inside the job's allocation (srun --overlap), as the node's launcher dials the master."""
    workdir = where.absolute(workdir)

    def listdir(path):
        names = where.listdir(path)
        if not names and not where.is_dir(path):
            raise OSError(path)
        return names

    def reach(node):
        status = record.read_status()
        hosts = [n.host for n in status.nodes]
        host = hosts[node.machine_rank] if node.machine_rank < len(hosts) else "?"
        if host == "?":
            return None
        r = where.run(
            [
                "srun",
                f"--jobid={status.handle.job_id}",
                "--overlap",
                "--nodes=1",
                "--ntasks=1",
                f"--nodelist={host}",
                "bash",
                "-c",
                reach_command(plan, node, master=hosts[0]),
            ],
            cwd=workdir,
            timeout=REACH_TIMEOUT,
        )
        return reach_problem(r.out + r.err, plan.world.master_addr, plan.world.master_port)

    return WorldWatch(
        plan,
        lambda n: ranks_started(workdir, plan.run_dir, n, listdir=listdir),
        reach,
        named_host=lambda n: _host_of(record, n),
    )


def _stacks(where, workdir: str, plan: LaunchPlan, record: RunRecord) -> dict:
    """Every rank's stack, taken on each of the job's hosts in a step of its own (srun --overlap)."""
    status = record.read_status()
    workdir = where.absolute(workdir)
    stacks = {}
    for node, host in zip(plan.nodes, [n.host for n in status.nodes]):
        r = where.run(
            [
                "srun",
                f"--jobid={status.handle.job_id}",
                "--overlap",
                "--nodes=1",
                "--ntasks=1",
                f"--nodelist={host}",
                "bash",
                "-c",
                dump_command(plan, node),
            ],
            cwd=workdir,
            timeout=REACH_TIMEOUT,
        )
        stacks.update(parse_dumps(r.out))
    return stacks


def note_info(where, record: RunRecord, info) -> RunStatus:
    """Keep the record's state, requeue count and hosts as SLURM last said them."""
    status = record.read_status()
    fields, moved = {"restarts": info.restarts, "slurm_state": info.slurm_state}, []
    # A verdict kit wrote before cancelling stays; a state SLURM has that kit does not know moves nothing.
    if not info.finished and info.kit_state is not None and status.state not in OVER:
        fields["state"] = info.kit_state
        if info.kit_state == RunState.RUNNING and status.state != RunState.RUNNING:  # this attempt's start (as SSH)
            fields["started_at"] = attempt_start(info, status, time.time())
        if info.kit_state != status.state:  # the queue's moves, in the timeline kit report reads
            moved = [{"at": time.time(), "event": info.kit_state, "attempt": info.restarts + 1, "detail": info.reason}]
    # The allocation's hosts while it runs; a job that ended before kit saw it running still names the hosts it ran on.
    unknown = any(n.host == "?" for n in status.nodes)
    hosts = hostnames(where, info.nodes) if info.kit_state == RunState.RUNNING or (info.finished and unknown) else []
    if hosts and len(hosts) == len(status.nodes):
        fields["nodes"] = [dataclasses.replace(n, host=h) for n, h in zip(status.nodes, hosts)]
    if info.restarts > len(status.attempts):  # requeued by the queue itself: its ended attempts are listed
        batch = batch_output(where, status)
        record.amend(lambda current: requeued_attempts(current, info.restarts, batch, time.time()))
    return record.update_status(append={"timeline": moved}, **fields)


def attempt_start(info, status: RunStatus, now: float) -> float:
    """When SLURM started the job (now - its RunTime; seconds only), kept between the record's last mark (the
    job was not running then) and now. Without it, now: the ranks may then have started a poll interval before the
    attempt did."""
    seen = [m.get("at") for m in status.timeline if m.get("at")] + [status.submitted_at or status.created_at or now]
    return now if info.started_at is None else min(now, max(max(seen), info.started_at))


def _host_of(record: RunRecord, node) -> str:
    hosts = [n.host for n in record.read_status().nodes]
    return hosts[node.machine_rank] if node.machine_rank < len(hosts) else node.host


def ends_this_attempt(info, requeues: int, seen_running: bool) -> bool:
    """Whether a finished JobInfo is the end of the attempt being followed (`requeues`: how many requeues SLURM
    must count by this attempt; 0 for the first)."""
    return not requeues or seen_running or (info.from_controller and info.restarts >= requeues)


def _log_ends(record_path: str) -> dict:
    """Each node log's size now: where print_new_lines starts for an attempt after the first."""
    return (
        {path: os.path.getsize(path) for _, path in node_logs(record_path, None)} if os.path.isdir(record_path) else {}
    )

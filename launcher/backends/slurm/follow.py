"""Following a SLURM job to its end: its queue state as SLURM says it, the node logs the tasks write on the shared
workdir (copied into the record and shown as they grow), the world and hang watches, and the record's final fields."""

import dataclasses
import logging
import os
import time

from launcher.backends.slurm.files import batch_output, copy_node_logs, exits_written
from launcher.backends.slurm.outcome import describe, final_fields, record_end, settle
from launcher.backends.slurm.poller import poller
from launcher.backends.slurm.query import hostnames
from launcher.backends.slurm.requeues import requeued_attempts
from launcher.errors import KitError
from launcher.insight.watch import InsightWatch
from launcher.planning.model import LaunchPlan
from launcher.preflight.reach import reach_command, reach_problem
from launcher.preflight.stacks import dump_command, parse_dumps
from launcher.records import RunRecord
from launcher.states import OVER, RunState
from launcher.status import Failure, RunStatus
from launcher.supervise.failure import cause, outcome_level
from launcher.supervise.hang import HangWatch
from launcher.supervise.log_lines import flush_held, node_logs, print_new_lines
from launcher.supervise.ranks_view import RanksView
from launcher.supervise.world import WorldWatch, ranks_started
from launcher.transport.where import CommandError

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
    CANCELLED then records this verdict, not `cancelled` (outcome.with_kits_verdict). A scancel that fails leaves
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

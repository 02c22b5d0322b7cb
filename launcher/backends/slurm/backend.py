"""SLURM: submit the plan's sbatch script unchanged, record the job id, follow the job (queue state, then the
node logs the tasks write on the shared workdir), report, cancel. kit never re-derives the script: the bytes
`sbatch` reads are the plan's, which the dry-run prints.

Every SLURM command and every touch of the cluster's workdir goes through transport/where.py: this machine, or the
login host (`slurm.login_host`) over SSH and SFTP. The run record stays where `kit submit` ran."""

import logging
import os
import time

from launcher import run_index
from launcher.backends.base import Backend, Result
from launcher.backends.slurm.follow import (
    clear_node_exit_codes,
    confine,
    copy_node_logs,
    describe,
    failure_of,
    final_fields,
    follow,
    note_info,
    record_end,
    settle,
)
from launcher.backends.slurm.queue import poller, query
from launcher.environment import process_env
from launcher.errors import KitError, SchedulerError
from launcher.planning.model import LaunchPlan
from launcher.records import RunRecord
from launcher.states import AttemptEnd, RunState
from launcher.status import ACTIVE, FINAL, RunStatus
from launcher.supervise import liveness
from launcher.transport.where import CommandError, where_at
from launcher.trust import require_trusted

log = logging.getLogger(__name__)

SUBMIT_TIMEOUT = 60.0
REQUEUE_DELAY = 2  # seconds before a requeued job may start again (see _requeue)
CANCEL_WAIT = 120.0


def added_env(plan: LaunchPlan) -> dict:
    """The plan's variables and the secret values (from this environment): what sbatch's environment adds to
    the one it starts in; SLURM exports it to the job. Never in the script or a command line."""
    return process_env(plan, plan.nodes[0], os.environ, inherit=False)


def where_of(record: RunRecord, status: RunStatus):
    """Where the record's SLURM commands run: here, or its login host, reached with the settings the record holds
    only if it is yours and writable by nobody else, and never accepting a new host key."""
    require_trusted(record)
    if not status.handle.login_host:
        confine(record, status)
        return where_at(None, None)
    return where_at(status.handle.login_host, {**(status.handle.login_ssh or {}), "accept_new_host_keys": False})


class SlurmBackend(Backend):
    name = "slurm"
    outlives_supervisor = True

    def use(self, binding: dict) -> None:
        """Where the SLURM commands run (the login host or here), the checks' inputs and the settings the record
        keeps for later (placement.binding)."""
        super().use(binding)
        self.login = binding["login"]
        self.where = where_at(self.login.get("login_host"), self.login.get("login_ssh"))
        self.workdir = binding["workdir"]
        self.max_requeues = binding["max_requeues"]

    @property
    def record_stays_here(self) -> bool:
        """With a login host the record is kept where kit runs; otherwise in the shared workdir."""
        return self.where.remote

    def check(self, plan: LaunchPlan, base_dir: str) -> None:
        """Secrets there, then what SLURM can tell before sbatch: login host, tools, partition, shape, workdir,
        the entrypoint script (backends/slurm/preflight.py)."""
        from launcher.backends.slurm.preflight import preflight_slurm

        added_env(plan)
        preflight_slurm(plan, self.where, self.binding.get("partition"), self.workdir, self.binding["entrypoint"])

    def submitted_fields(self, plan: LaunchPlan, record: RunRecord, job_id: str, workdir: str) -> dict:
        """What a record holds once its job is queued: the job id and where its files are (one definition for a
        single job and an array task)."""
        return dict(
            state=RunState.PENDING,
            job_id=job_id,
            submitted_at=time.time(),
            workdir=workdir,
            run_dir=plan.run_dir,
            max_requeues=self.max_requeues,
            **self.login,
            nodes=[{"rank": n.machine_rank, "host": "?"} for n in plan.nodes],
        )

    def _submit(self, plan: LaunchPlan, record: RunRecord) -> str:
        try:
            workdir = self.where.absolute(self.workdir)
            for rel, content in sorted(plan.files.items()):
                self.where.write(os.path.join(workdir, rel), content)
            r = self.where.run(
                list(plan.submission.argv), cwd=workdir, env=added_env(plan), drop=plan.inherit, timeout=SUBMIT_TIMEOUT
            )
        except (OSError, CommandError, KitError) as e:
            record.update_status(state=RunState.FAILED, exit_code=1, finished_at=time.time())
            raise SchedulerError(
                f"sbatch could not be run on {self.where.where}: {e}", command="sbatch", said=str(e)
            ) from None
        job_id = r.out.strip().split(";")[0]
        if r.code != 0 or not job_id.isdigit():
            record.update_status(state=RunState.FAILED, exit_code=1, finished_at=time.time())
            why = (r.err.strip().splitlines() or ["no job id printed"])[-1]
            raise SchedulerError(f"sbatch refused the job: {why}", command="sbatch", said=why)
        record.update_status(**self.submitted_fields(plan, record, job_id, workdir))
        via = f" via {self.where.where}" if self.where.remote else ""
        log.info(f"kit: submitted SLURM job {job_id}{via} (script {plan.run_dir}/job.sbatch)")
        return job_id

    def detach(self, plan: LaunchPlan, record: RunRecord, base_dir: str, inputs=None) -> None:
        """The queue keeps the job: submitting is all (no supervisor process, so kit restarts nothing; the batch
        shell's own requeues still happen)."""
        self._submit(plan, record)
        log.warning(_how_to(plan.run_id, record))  # the run's id and job: the answer, said with -q too

    def execute(self, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None) -> Result:
        self._submit(plan, record)
        return self._follow_result(plan, record)

    def _follow_result(self, plan: LaunchPlan, record: RunRecord, requeues: int = 0) -> Result:
        try:
            fields = follow(self.where, self.workdir, plan, record, requeues)
        except KeyboardInterrupt:
            log.warning(f"\nkit: stopped following; the job keeps running. {_how_to(plan.run_id, record)}")
            return Result(130, AttemptEnd.STILL_RUNNING, None)
        return Result(fields["exit_code"], fields["state"], failure_of(fields))

    def restart_refused(self, record: RunRecord) -> str:
        """The requeues the batch shell counts (slurm.max_requeues: preemption and time limits) and kit's restarts
        share one budget."""
        status = record.read_status()
        if status.handle.restarts >= (status.handle.max_requeues or 0):
            return f"its requeue budget (slurm.max_requeues={status.handle.max_requeues}) is spent"
        return ""

    def execute_again(self, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None) -> Result:
        """A restart on SLURM is a requeue of the same job: a new allocation runs the same script (attempt k's
        plan is attempt 1's: placement.restarts_in_place), ranks and master resolved again there."""
        status = record.read_status()
        try:
            requeued = self._requeue(status)
        except KeyboardInterrupt:  # the job may be requeued already: say so, not "nothing was started"
            if query(self.where, status.handle.job_id).finished:
                raise KitError(f"interrupted; SLURM job {status.handle.job_id} was not requeued") from None
            record.update_status(reopen=True, state=RunState.REQUEUED)
            log.warning(
                f"\nkit: stopped following; SLURM job {status.handle.job_id} is requeued and will run. "
                f"{_how_to(plan.run_id, record)}"
            )
            return Result(130, AttemptEnd.STILL_RUNNING, None)
        if not requeued:
            raise SchedulerError(
                f"SLURM refused to requeue job {status.handle.job_id}",
                command=f"scontrol requeue {status.handle.job_id}",
            )
        record.keep_attempt_plan(plan)
        record.update_status(reopen=True, state=RunState.REQUEUED)
        return self._follow_result(plan, record, requeues=status.handle.restarts + 1)

    def _requeue(self, status) -> bool:
        """Requeue a finished job and make it eligible soon (a requeued job waits ~2 min by default). Not at once:
        each node refuses a credential for the same job id issued within the second its last attempt ended ("Job
        credential revoked"), and SLURM then fails the new attempt before it runs. The nodes' exit files go first,
        so that an attempt that never ran reads as such, not as the last attempt's failure."""
        job_id = status.handle.job_id
        clear_node_exit_codes(self.where, status)
        r = self.where.run(["scontrol", "requeue", job_id], timeout=SUBMIT_TIMEOUT)
        if r.code != 0:
            return False
        # Held past that second, then eligible at once (a begin time in the future waits for the scheduler's
        # next periodic pass, ~15 s on the test cluster).
        time.sleep(REQUEUE_DELAY)
        self.where.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], timeout=SUBMIT_TIMEOUT)
        polls = poller(self.where)
        polls.nudge()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until SLURM says it waits again (not the attempt that ended)
            if not polls.info(job_id).finished:
                return True
            time.sleep(0.5)
        return False

    def fetch_logs(self, record: RunRecord, status: RunStatus) -> None:
        """Bring the record's node logs up to date with the run directory (`kit logs` calls this)."""
        if not (status.handle.job_id and status.handle.workdir):
            return
        try:
            copy_node_logs(where_of(record, status), status, record.path)
        except (KitError, CommandError) as e:
            log.warning(f"kit: warning: could not bring the node logs up to date ({e}); showing the record's copy")

    def current_state(self, record: RunRecord, status: RunStatus) -> tuple[str, str]:
        state = status.state
        gone = status.supervisor_pid and liveness.supervisor(status) is None
        if not status.handle.job_id and state in ACTIVE and gone:
            return RunState.LOST, (
                f"kit (pid {status.supervisor_pid}) ended before SLURM took the job; nothing was queued"
            )
        if state in FINAL or not status.handle.job_id:
            return state, status.ended_by or _requeue_note(status) or status.note
        where = where_of(record, status)
        polls = poller(where)  # a `kit status` asks once; a sweep's follower asks for all its trials at once
        info = settle(where, status, polls.info(status.handle.job_id))
        if info.finished:
            polls.forget(status.handle.job_id)
            copy_node_logs(where, status, record.path)  # the failure summary reads the record's copy
            fields = record_end(record, final_fields(where, status, info, record.path))
            return fields["state"], fields["ended_by"] or f"{describe(info)}, exit code {fields['exit_code']}"
        if info.kit_state is None:
            return state, f"SLURM job {status.handle.job_id}: SLURM does not know it (any more)"
        note_info(where, record, info)
        return info.kit_state, describe(info)

    def submit_many(self, sweep, todo: list, specs: dict, base_dir: str):
        """One job array for the trials `todo`, submitted where the SLURM commands run (here or the login host)."""
        from launcher.backends.slurm.arrays import create_records, submit_array

        made = create_records(self.record_root(self.workdir, base_dir), todo, specs)
        array_id, argv = submit_array(self, sweep, todo, made, SUBMIT_TIMEOUT)
        poller(self.where).watch(f"{array_id}_{t.index}" for t in todo)  # followed as one: one query for all
        via = f" via {self.where.where}" if self.where.remote else ""
        skipped = len(sweep.trials) - len(todo)
        log.info(
            f"kit: sweep {sweep.sweep_id}: submitted SLURM job array {array_id}{via} ({len(todo)} trial(s), at "
            f"most {sweep.spec.parallel} at once{f'; {skipped} succeeded before' if skipped else ''}): "
            f"{' '.join(argv)}"
        )
        return {
            "array_job_id": array_id,
            "array_tasks": [t.index for t in todo],
            "submitted_at": time.time(),
            **self.login,
        }

    def cancel_many(self, sweep_data: dict, sweep_path: str):
        from launcher.backends.slurm.arrays import cancel_array

        return cancel_array(self, sweep_data, sweep_path)

    def read_output(self, plan: LaunchPlan, base_dir: str, path: str, limit: int):
        data = self.where.read(os.path.join(self.where.absolute(self.workdir), path))
        return None if data is None else data[:limit]

    def fetch_output(self, record: RunRecord, status: RunStatus, path: str, limit: int):
        if not status.handle.workdir:
            return None
        data = where_of(record, status).read(os.path.join(status.handle.workdir, path))
        return None if data is None else data[:limit]

    def doctor_rows(self, cluster, job, plan) -> list:
        from launcher.backends.slurm.preflight import doctor_rows

        return doctor_rows(cluster, job, plan)

    def cancel(self, record: RunRecord, status: RunStatus) -> str:
        where = where_of(record, status)
        job_id = status.handle.job_id
        where.cancel(job_id)
        polls = poller(where)
        polls.nudge()
        deadline = time.monotonic() + CANCEL_WAIT
        info = settle(where, status, polls.info(job_id))
        while not info.finished and time.monotonic() < deadline:  # asked as the poller backs off, not each tick
            time.sleep(0.5)
            info = settle(where, status, polls.info(job_id))
        polls.forget(job_id)
        if not info.finished:
            still = info.kit_state or info.slurm_state
            return f"kit: run {status.run_id}: scancel sent to SLURM job {job_id}; it is still {still}"
        copy_node_logs(where, status, record.path)
        fields = record_end(record, final_fields(where, status, info, record.path))
        if fields["state"] != RunState.CANCELLED:  # kit's own watch had cancelled it already: its verdict stands
            return f"kit: run {status.run_id} {fields['state']} (SLURM job {job_id} ended: {info.slurm_state})"
        return f"kit: run {status.run_id} cancelled (SLURM job {job_id} ended: {info.slurm_state})"


def _requeue_note(status: RunStatus) -> str:
    n = status.handle.restarts or 0
    return f"SLURM job {status.handle.job_id} was requeued {n} time(s)" if n else ""


def _how_to(run_id: str, record: RunRecord) -> str:
    root = run_index.root_flag(record.path)  # "" where kit's index (or ./runs) finds the run by its id
    return (
        f"Follow it with `kit logs {run_id} --follow{root}` or `kit status {run_id}{root}`; stop it with "
        f"`kit cancel {run_id}{root}`."
    )


BACKEND = SlurmBackend

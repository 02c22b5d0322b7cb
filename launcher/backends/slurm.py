"""SLURM: submit the plan's sbatch script unchanged, record the job id, follow the job (queue state, then the
node logs the tasks write on the shared workdir), report, cancel. kit never re-derives the script: the bytes
`sbatch` reads are the plan's, which the dry-run prints.

Every SLURM command and every touch of the cluster's workdir goes through slurm_where: this machine, or the
login host (`slurm.login_host`) over SSH and SFTP. The run record stays where `kit submit` ran."""

import os
import sys
import time

from launcher.backends.environment import node_process_env
from launcher.backends.slurm_files import copy_node_logs
from launcher.backends.slurm_outcome import describe, failure_of, final_fields
from launcher.backends.slurm_query import hostnames, query
from launcher.backends.slurm_where import CommandError, where_from_status
from launcher.commands.logs import flush_held, print_new_lines
from launcher.errors import KitError
from launcher.plan.model import LaunchPlan
from launcher.runs import RunRecord

POLL = 1.0
SUBMIT_TIMEOUT = 60.0
CANCEL_WAIT = 120.0
FINAL = ("succeeded", "failed", "cancelled", "timeout", "preempted")


def _added_env(plan: LaunchPlan) -> dict:
    """The plan's variables and the secret values (from this environment): what sbatch's environment adds to
    the one it starts in; SLURM exports it to the job. Never in the script or a command line."""
    node = plan.nodes[0]
    return node_process_env(plan, node, {n: os.environ[n] for n in node.secret_env if n in os.environ})


class SlurmBackend:
    name = "slurm"

    def use(self, binding: dict) -> None:
        """Where the SLURM commands run (the login host or here) and the settings the record keeps for later
        (backends/binding.py)."""
        self.where = where_from_status(binding["login"])
        self.login = binding["login"]
        self.workdir = binding["workdir"]
        self.max_requeues = binding["max_requeues"]

    @property
    def record_stays_here(self) -> bool:
        """With a login host the record is kept where kit runs; otherwise in the shared workdir."""
        return self.where.remote

    def check(self, plan: LaunchPlan) -> None:
        _added_env(plan)

    def _submit(self, plan: LaunchPlan, record: RunRecord) -> str:
        try:
            workdir = self.where.absolute(self.workdir)
            for rel, content in sorted(plan.files.items()):
                self.where.write(os.path.join(workdir, rel), content)
            r = self.where.run(list(plan.submission.argv), cwd=workdir, env=_added_env(plan), drop=plan.inherit,
                               timeout=SUBMIT_TIMEOUT)
        except (OSError, CommandError, KitError) as e:
            record.update_status(state="failed", exit_code=1, finished_at=time.time())
            raise KitError(f"sbatch could not be run on {self.where.where}: {e}") from None
        job_id = r.out.strip().split(";")[0]
        if r.code != 0 or not job_id.isdigit():
            record.update_status(state="failed", exit_code=1, finished_at=time.time())
            why = (r.err.strip().splitlines() or ["no job id printed"])[-1]
            raise KitError(f"sbatch refused the job: {why}")
        record.update_status(state="pending", job_id=job_id, submitted_at=time.time(), path=record.path,
                             workdir=workdir, run_dir=plan.run_dir, max_requeues=self.max_requeues, **self.login,
                             nodes=[{"rank": n.machine_rank, "host": "?", "pid": "-"} for n in plan.nodes])
        via = f" via {self.where.where}" if self.where.remote else ""
        print(f"kit: submitted SLURM job {job_id}{via} (script {plan.run_dir}/job.sbatch)", file=sys.stderr,
              flush=True)
        return job_id

    def detach(self, plan: LaunchPlan, record: RunRecord, base_dir: str) -> int:
        self._submit(plan, record)
        print(_how_to(plan.run_id, record), file=sys.stderr)
        return 0

    def execute(self, plan: LaunchPlan, record: RunRecord, base_dir: str):
        self._submit(plan, record)
        try:
            fields = self._follow(record)
        except KeyboardInterrupt:
            print(f"\nkit: stopped following; the job keeps running. {_how_to(plan.run_id, record)}",
                  file=sys.stderr, flush=True)
            return 130, "still running", None
        return fields["exit_code"], fields["state"], failure_of(fields)

    def _follow(self, record: RunRecord) -> dict:
        status = record.read_status()
        offsets, pending, noise, said = {}, {}, {}, None
        while True:
            info = query(self.where, record.path, status["job_id"])
            if describe(info) != said and not info.finished:
                said = describe(info)
                print(f"kit: {said}", file=sys.stderr, flush=True)
                status = _note(self.where, record, info)
            copy_node_logs(self.where, status, record.path)
            print_new_lines(record, None, offsets, pending, noise)
            if info.finished:
                flush_held(noise)
                fields = final_fields(self.where, status, info)
                record.update_status(**fields, finished_at=time.time())
                # The run's end as kit reads it (SLURM says FAILED for a job whose time ran out at the warning).
                why = f": {fields['ended_by']}" if fields["ended_by"] else ""
                print(f"kit: SLURM job {status['job_id']} {fields['state']}{why}", file=sys.stderr, flush=True)
                return fields
            time.sleep(POLL)

    def fetch_logs(self, record: RunRecord, status: dict) -> None:
        """Bring the record's node logs up to date with the run directory (`kit logs` calls this)."""
        if not (status.get("job_id") and status.get("workdir")):
            return
        try:
            copy_node_logs(where_from_status(status), status, record.path)
        except (KitError, CommandError) as e:
            print(f"kit: warning: could not bring the node logs up to date ({e}); showing the record's copy",
                  file=sys.stderr, flush=True)

    def current_state(self, status: dict) -> tuple[str, str]:
        state = status.get("state", "?")
        if state in FINAL or not status.get("job_id"):
            return state, status.get("ended_by") or _requeue_note(status)
        where = where_from_status(status)
        info = query(where, status["path"], status["job_id"])
        record = RunRecord(status["path"])
        if info.finished:
            copy_node_logs(where, status, record.path)   # the failure summary reads the record's copy
            fields = final_fields(where, status, info)
            record.update_status(**fields, finished_at=time.time())
            return fields["state"], fields["ended_by"] or f"{describe(info)}, exit code {fields['exit_code']}"
        if info.kit_state == "unknown":
            return state, f"SLURM job {status['job_id']}: SLURM does not know it (any more)"
        _note(where, record, info)
        return info.kit_state, describe(info)

    def cancel(self, record: RunRecord, status: dict) -> str:
        where = where_from_status(status)
        job_id = status["job_id"]
        where.cancel(record.path, job_id)
        deadline = time.monotonic() + CANCEL_WAIT
        info = query(where, record.path, job_id)
        while not info.finished and time.monotonic() < deadline:
            time.sleep(0.5)
            info = query(where, record.path, job_id)
        if not info.finished:
            return f"kit: run {status['run_id']}: scancel sent to SLURM job {job_id}; it is still {info.kit_state}"
        copy_node_logs(where, status, record.path)
        record.update_status(**final_fields(where, status, info), finished_at=time.time())
        return f"kit: run {status['run_id']} cancelled (SLURM job {job_id} ended: {info.slurm_state})"


def _note(where, record: RunRecord, info) -> dict:
    """Keep the record's state, requeue count and hosts as SLURM last said them."""
    status = record.read_status()
    fields = {"restarts": info.restarts, "slurm_state": info.slurm_state}
    if not info.finished:
        fields["state"] = info.kit_state
    hosts = hostnames(where, info.nodes) if info.kit_state == "running" else []
    if hosts and len(hosts) == len(status.get("nodes", [])):
        fields["nodes"] = [{**n, "host": h} for n, h in zip(status["nodes"], hosts)]
    return record.update_status(**fields)


def _requeue_note(status: dict) -> str:
    n = status.get("restarts") or 0
    return f"SLURM job {status.get('job_id')} was requeued {n} time(s)" if n else ""


def _how_to(run_id: str, record: RunRecord) -> str:
    root = os.path.dirname(record.path)
    return (f"Follow it with `kit logs {run_id} --follow --run-root {root}` or `kit status {run_id} --run-root "
            f"{root}`; stop it with `kit cancel {run_id} --run-root {root}`.")

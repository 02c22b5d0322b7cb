"""SLURM: submit the plan's sbatch script unchanged, record the job id, follow the job (queue state, then the
node logs the tasks write on the shared workdir), report, cancel. kit never re-derives the script: the bytes
`sbatch` reads are the plan's, which the dry-run prints."""

import os
import subprocess
import sys
import time

from launcher.backends.environment import node_process_env
from launcher.backends.slurm_outcome import describe, failure_of, final_fields
from launcher.backends.slurm_query import hostnames, query
from launcher.commands.logs import print_new_lines
from launcher.errors import KitError
from launcher.plan.model import LaunchPlan
from launcher.runs import RunRecord
from launcher.supervise.failure import TRAIN_MODULE

POLL = 1.0
SUBMIT_TIMEOUT = 60.0
CANCEL_WAIT = 120.0
FINAL = ("succeeded", "failed", "cancelled", "timeout", "preempted")


def _workdir(record: RunRecord, plan: LaunchPlan) -> str:
    # runs.create put the record at <workdir>/<run_dir>: the workdir is what is above it.
    return record.path[: -len(plan.run_dir)].rstrip("/") or "/"


def _uses_train_module(plan: LaunchPlan) -> bool:
    argv = plan.nodes[0].argv
    modules = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w == "-m"]
    return modules[-1:] == [TRAIN_MODULE] and len(modules) > 1


class SlurmBackend:
    name = "slurm"

    def check(self, plan: LaunchPlan) -> None:
        node_process_env(plan, plan.nodes[0], dict(os.environ))

    def _submit(self, plan: LaunchPlan, record: RunRecord) -> str:
        workdir = _workdir(record, plan)
        # Secrets travel in sbatch's environment (SLURM exports it to the job), never in the script.
        env = node_process_env(plan, plan.nodes[0], dict(os.environ))
        try:
            r = subprocess.run(list(plan.submission.argv), cwd=workdir, env=env, capture_output=True, text=True,
                               timeout=SUBMIT_TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            record.update_status(state="failed", exit_code=1, finished_at=time.time())
            raise KitError(f"sbatch could not be run: {e}") from None
        job_id = r.stdout.strip().split(";")[0]
        if r.returncode != 0 or not job_id.isdigit():
            record.update_status(state="failed", exit_code=1, finished_at=time.time())
            why = (r.stderr.strip().splitlines() or ["no job id printed"])[-1]
            raise KitError(f"sbatch refused the job: {why}")
        record.update_status(state="pending", job_id=job_id, submitted_at=time.time(), path=record.path,
                             workdir=workdir, run_dir=plan.run_dir, train_module=_uses_train_module(plan),
                             nodes=[{"rank": n.machine_rank, "host": "?", "pid": "-"} for n in plan.nodes])
        print(f"kit: submitted SLURM job {job_id} (script {plan.run_dir}/job.sbatch)", file=sys.stderr, flush=True)
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
        offsets, pending, said = {}, {}, None
        while True:
            info = query(record.path, status["job_id"])
            if describe(info) != said:
                said = describe(info)
                print(f"kit: {said}", file=sys.stderr, flush=True)
                status = _note(record, info)
            print_new_lines(record, None, offsets, pending)
            if info.finished:
                fields = final_fields(status, info)
                record.update_status(**fields, finished_at=time.time())
                return fields
            time.sleep(POLL)

    def current_state(self, status: dict) -> tuple[str, str]:
        state = status.get("state", "?")
        if state in FINAL or not status.get("job_id"):
            return state, _requeue_note(status)
        info = query(status["path"], status["job_id"])
        if info.finished:
            fields = final_fields(status, info)
            RunRecord(status["path"]).update_status(**fields, finished_at=time.time())
            return fields["state"], f"{describe(info)}, exit code {fields['exit_code']}"
        if info.kit_state == "unknown":
            return state, f"SLURM job {status['job_id']}: SLURM does not know it (any more)"
        _note(RunRecord(status["path"]), info)
        return info.kit_state, describe(info)

    def cancel(self, record: RunRecord, status: dict) -> str:
        from submitit.slurm.slurm import SlurmJob  # lazily: keeps the CLI's import path light
        job_id = status["job_id"]
        try:
            SlurmJob(record.path, job_id).cancel(check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            raise KitError(f"scancel {job_id} failed: {e}") from None
        deadline = time.monotonic() + CANCEL_WAIT
        info = query(record.path, job_id)
        while not info.finished and time.monotonic() < deadline:
            time.sleep(0.5)
            info = query(record.path, job_id)
        if not info.finished:
            return f"kit: run {status['run_id']}: scancel sent to SLURM job {job_id}; it is still {info.kit_state}"
        record.update_status(**final_fields(status, info), finished_at=time.time())
        return f"kit: run {status['run_id']} cancelled (SLURM job {job_id} ended: {info.slurm_state})"


def _note(record: RunRecord, info) -> dict:
    """Keep the record's state, requeue count and hosts as SLURM last said them."""
    status = record.read_status()
    fields = {"restarts": info.restarts, "slurm_state": info.slurm_state}
    if not info.finished:
        fields["state"] = info.kit_state
    hosts = hostnames(info.nodes) if info.kit_state == "running" else []
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

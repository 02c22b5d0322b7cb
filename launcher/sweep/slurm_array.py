"""A sweep on SLURM: every trial's files and run record, one preflight, one `sbatch` of the array script, then
each trial's record holds its array task's job id (`<array id>_<index>`), so `kit status/logs/cancel <trial>`
go through the SLURM backend as for any single run. The sweep driver calls `run_array` for SLURM clusters."""

import os
import subprocess
import sys
import time

from launcher import runs
from launcher.backends import get_backend
from launcher.backends.environment import node_process_env
from launcher.errors import KitError
from launcher.preflight.slurm import preflight_slurm
from launcher.render.slurm import DEFAULT_MAX_REQUEUES
from launcher.secrets import is_secret
from launcher.sweep.rerun import trials_to_run
from launcher.sweep.slurm_follow import follow_array, how_to
from launcher.sweep.slurm_script import array_option
from launcher.sweep.trials import Trial, trial_job

SUBMIT_TIMEOUT = 60.0


def _workdir(resolved_cluster) -> str:
    return os.path.normpath(os.path.join(os.getcwd(), resolved_cluster.workdir))


def _write_trials(plan, record, todo, resolved_job, resolved_cluster, workdir) -> dict:
    made = {}
    for trial in todo:
        tjob = trial_job(resolved_job, plan.spec, Trial(trial.index, trial.params), trial.output_dir)
        made[trial.index] = runs.create(workdir, trial.plan, tjob, resolved_cluster)
    # The array script sits in the sweep's record, which is the sweep's run directory under the workdir.
    with open(os.path.join(workdir, plan.array.script_path), "w", encoding="utf-8") as f:
        f.write(plan.array.script)
    return made


def _sbatch(plan, argv, workdir: str) -> str:
    first = plan.trials[0].plan
    node = first.nodes[0]
    # sbatch's environment reaches every task (SLURM exports it): the inherited one plus the secret values,
    # which never go into a script. The trials' own variables are in their scripts, per trial.
    full = node_process_env(first, node, dict(os.environ))
    env = {k: v for k, v in full.items() if k not in node.env or is_secret(k, node.secret_env)}
    try:
        r = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise KitError(f"sbatch could not be run: {e}") from None
    job_id = r.stdout.strip().split(";")[0]
    if r.returncode != 0 or not job_id.isdigit():
        why = (r.stderr.strip().splitlines() or ["no job id printed"])[-1]
        raise KitError(f"sbatch refused the sweep's job array: {why}")
    return job_id


def _submit_argv(plan, todo) -> list[str]:
    """The plan's `sbatch --parsable <script>`; a re-run that skips trials names the rest on the command line
    (which overrides the script's --array line)."""
    argv = list(plan.array.argv)
    if len(todo) != len(plan.trials):
        argv.insert(-1, array_option([t.index for t in todo], plan.spec.parallel))
    return argv


def _mark_submitted(made: dict, todo, array_id: str, workdir: str, cluster) -> None:
    max_requeues = cluster.slurm.max_requeues if cluster.slurm is not None else DEFAULT_MAX_REQUEUES
    now = time.time()
    for trial in todo:
        p = trial.plan
        made[trial.index].update_status(
            state="pending", job_id=f"{array_id}_{trial.index}", array_job_id=array_id, submitted_at=now,
            path=made[trial.index].path, workdir=workdir, run_dir=p.run_dir,
            max_requeues=max_requeues, nodes=[{"rank": n.machine_rank, "host": "?", "pid": "-"} for n in p.nodes])


def _fail_all(made: dict) -> None:
    for record in made.values():
        record.update_status(state="failed", exit_code=1, finished_at=time.time())


def run_array(plan, record, job, cluster, resolved_job, resolved_cluster, args) -> int:
    """Submit the sweep as one job array and follow it (or return at once with --detach). Returns 0 when every
    trial succeeded, else the exit code of the first trial that did not; 130 when Ctrl-C stopped following."""
    if plan.array is None:
        raise KitError(f"sweep {plan.sweep_id}: backend {plan.backend} has no job array; this path is SLURM's")
    if getattr(resolved_cluster.slurm, "login_host", None):
        raise KitError("slurm.login_host: sweeps are submitted on the cluster itself for now; run kit submit "
                       "--sweep on the login host")
    backend = get_backend("slurm")
    workdir = _workdir(resolved_cluster)
    first = plan.trials[0].plan
    if os.path.dirname(os.path.join(workdir, first.run_dir)) != os.path.dirname(record.path):
        raise KitError(f"sweep record {record.path} is not in the trials' run root "
                       f"{os.path.dirname(os.path.join(workdir, first.run_dir))}")
    backend.check(first)
    preflight_slurm(first, resolved_job, resolved_cluster)
    # A re-run skips trials that succeeded and sets the others' old records aside, as on every backend.
    todo = trials_to_run(plan, os.path.dirname(record.path), lambda line: print(line, file=sys.stderr))
    if not todo:
        print(f"kit: sweep {plan.sweep_id}: every trial succeeded already; nothing to run", file=sys.stderr)
        return 0
    made = _write_trials(plan, record, todo, resolved_job, resolved_cluster, workdir)
    argv = _submit_argv(plan, todo)
    try:
        array_id = _sbatch(plan, argv, workdir)
    except KitError:
        _fail_all(made)
        raise
    _mark_submitted(made, todo, array_id, workdir, resolved_cluster)
    # `workdir`: where `kit sweep status` reads each trial's metrics file (outputs are relative to it).
    record.update(state="running", array_job_id=array_id, array_tasks=[t.index for t in todo], workdir=workdir,
                  submitted_at=time.time(), finished_at=None, exit_code=None)
    skipped = len(plan.trials) - len(todo)
    print(f"kit: sweep {plan.sweep_id}: submitted SLURM job array {array_id} ({len(todo)} trial(s), at most "
          f"{plan.spec.parallel} at once{f'; {skipped} succeeded before' if skipped else ''}): {' '.join(argv)}",
          file=sys.stderr, flush=True)
    if args.detach:
        print(how_to(plan.sweep_id, record), file=sys.stderr)
        return 0
    return follow_array(record, [t.run_id for t in todo])

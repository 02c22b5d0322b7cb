"""A sweep on SLURM is one job array, submitted like a single job (backend.py): through `where` (this machine or
the login host), every trial's files into the cluster's workdir, one `sbatch` of the array script. Each trial's
record then holds its array task's job id (`<array id>_<index>`), so `kit status/logs/cancel <trial>` go through
the SLURM backend as for any single run. The sweep (launcher/sweep) decides which trials run and writes their
records' specs; this module only submits."""

import os
import time

from launcher import records
from launcher.backends.slurm.array_script import array_option
from launcher.backends.slurm.poller import poller
from launcher.environment import process_env
from launcher.errors import KitError, SchedulerError
from launcher.secrets import is_secret
from launcher.transport.where import CommandError
from launcher.trust import require_trusted
from launcher.states import RunState


def submit_argv(sweep, todo) -> list[str]:
    """The plan's `sbatch --parsable <script>`; a re-run that skips trials names the rest on the command line
    (which overrides the script's --array line)."""
    argv = list(sweep.array.argv)
    if len(todo) != len(sweep.trials):
        argv.insert(-1, array_option([t.index for t in todo], sweep.spec.parallel))
    return argv


def _secrets(sweep) -> dict:
    """The secret values sbatch's environment carries (SLURM exports it to every task); never in a script. The
    trials' other variables are in their own scripts."""
    first = sweep.trials[0].plan
    node = first.nodes[0]
    added = process_env(first, node, os.environ, inherit=False)
    return {k: v for k, v in added.items() if is_secret(k, node.secret_env)}


def submit_array(backend, sweep, todo, made: dict, timeout: float) -> tuple[str, list[str]]:
    """Write every trial's files and the array script where the nodes read them, sbatch the array (as a single
    job's sbatch: `timeout`, the backend's), mark each trial's record submitted. `made`: trial index -> its
    RunRecord (already created). (array id, argv)."""
    where = backend.where
    try:
        workdir = where.absolute(backend.workdir)
        for trial in todo:
            for rel, content in sorted(trial.plan.files.items()):
                where.write(os.path.join(workdir, rel), content)
        where.write(os.path.join(workdir, sweep.array.script_path), sweep.array.script)
        argv = submit_argv(sweep, todo)
        r = where.run(argv, cwd=workdir, env=_secrets(sweep), drop=sweep.trials[0].plan.inherit, timeout=timeout)
    except (OSError, CommandError) as e:
        _fail_all(made)
        raise SchedulerError(f"sbatch could not be run on {where.where}: {e}", command="sbatch", said=str(e)) from None
    array_id = r.out.strip().split(";")[0]
    if r.code != 0 or not array_id.isdigit():
        _fail_all(made)
        why = (r.err.strip().splitlines() or ["no job id printed"])[-1]
        raise SchedulerError(f"sbatch refused the sweep's job array: {why}", command="sbatch", said=why)
    for trial in todo:
        rec = made[trial.index]
        rec.update_status(
            array_job_id=array_id, **backend.submitted_fields(trial.plan, rec, f"{array_id}_{trial.index}", workdir)
        )
    return array_id, argv


def _fail_all(made: dict) -> None:
    for record in made.values():
        record.update_status(state=RunState.FAILED, exit_code=1, finished_at=time.time())


def create_records(root: str, todo, specs: dict) -> dict:
    """Each trial's record under `root` (its specs from `specs`: index -> (job record, cluster record))."""
    return {t.index: records.create(root, t.plan, *specs[t.index]) for t in todo}


CANCEL_WAIT = 120.0


def cancel_array(backend, sweep_data: dict, sweep_path: str) -> str:
    """scancel of the sweep's array job (every task, running or still waiting), where it was submitted; then
    wait until SLURM reports every task ended, which brings the trials' records up to date."""
    from launcher.status import NOT_OVER
    from launcher.transport.where import where_at

    sweep_id = os.path.basename(sweep_path)
    array_id = sweep_data.get("array_job_id")
    if not array_id:
        raise KitError(f"sweep {sweep_id}: no SLURM job array was submitted for it; nothing to cancel")
    login = sweep_data.get("login_host")
    if login:
        require_trusted(records.RunRecord(sweep_path), "sweep.json")
    where = where_at(login, {**(sweep_data.get("login_ssh") or {}), "accept_new_host_keys": False})
    where.cancel(str(array_id))
    trials = [records.RunRecord(os.path.join(os.path.dirname(sweep_path), t["run_id"])) for t in sweep_data["trials"]]
    # Every task asked in one query per round, backing off (current_state asks the same poller), not each every tick.
    polls = poller(where)
    polls.watch(s.handle.job_id for s in (t.read_status() for t in trials if t.exists()) if s.handle.job_id)
    polls.nudge()

    def states() -> dict:
        out = {}
        for trial in trials:
            status = trial.read_status()
            if not trial.exists():
                out[os.path.basename(trial.path)] = "not started"
            elif not status.handle.job_id:
                out[status.run_id] = "not submitted" if status.state in NOT_OVER else status.state
            else:
                out[status.run_id] = backend.current_state(trial, status)[0]
        return out

    deadline = time.monotonic() + CANCEL_WAIT
    now = states()
    while any(s in NOT_OVER for s in now.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
        now = states()
    left = sorted(r for r, s in now.items() if s in NOT_OVER)
    if left:
        return f"kit: sweep {sweep_id}: scancel sent to SLURM job array {array_id}; still ending: {', '.join(left)}"
    counts: dict[str, int] = {}
    for s in now.values():
        counts[s] = counts.get(s, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    return f"kit: sweep {sweep_id} cancelled (SLURM job array {array_id} ended: {summary})"

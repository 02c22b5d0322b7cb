"""Run a sweep: the checks once (on the first trial), its record, the trials to run; then the backend submits them
as one where it can (a SLURM job array, followed here through the trials' records), else the sweep driver
launches each trial like one `kit submit`, lane by lane (driver.py), in the foreground or detached."""

import logging
import os
import sys
import time
import traceback
from typing import Optional

from launcher.backends import registry
from launcher.environment import dropped_warning
from launcher.errors import KitError, Option
from launcher.states import RunState
from launcher.supervise import spawned, tree
from launcher.supervise.console import Console
from launcher.sweeps.driver import Driver
from launcher.sweeps.follow import follow_trials, how_to
from launcher.sweeps.record import is_sweep, open_sweep
from launcher.sweeps.rerun import trials_to_run
from launcher.sweeps.table import metric_problem
from launcher.sweeps.trial_proc import SweepContext, leave, trial_specs

log = logging.getLogger(__name__)


def _refuse_if_running(record) -> None:
    data = record.read()
    driver = tree.same_process(data.get("driver_pid"), data.get("driver_start"))
    if driver is not None:
        raise KitError(
            f"sweep {record.sweep_id} is running already (kit, pid {driver.pid}); follow it with "
            f"`kit sweep status {record.sweep_id}` or stop it with `kit cancel {record.sweep_id}`"
        )


def _refuse_an_earlier_id(plan, run_root: str) -> None:
    """A sweep an earlier kit recorded under the id that held its metric is continued by naming it, not started
    over under its new id (which the dry-run showed)."""
    if (
        plan.earlier_id in (None, plan.sweep_id)
        or is_sweep(run_root, plan.sweep_id)
        or not is_sweep(run_root, plan.earlier_id)
    ):
        return
    raise KitError(
        f"this sweep was recorded by an earlier kit as {plan.earlier_id} (its id held sweep.metric then); "
        "continue it with ",
        Option("run_id", plan.earlier_id),
        ", or start it over with ",
        Option("run_id", plan.sweep_id),
    )


def _need_optuna() -> None:
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise KitError(
            "sweep.method tpe and sweep.early_stopping need Optuna, which is not installed here; "
            "pip install optuna==5.0.0"
        ) from None


def _how_to(record, root_arg: str) -> str:
    s = record.sweep_id
    return (
        f"kit: sweep {s} detached; follow it with `kit sweep status {s}{root_arg}` (a trial: `kit logs "
        f"{s}-tN{root_arg}`), stop it with `kit cancel {s}{root_arg}`"
    )


def _detach(plan, record, ctx: SweepContext, todo) -> None:
    """The driver goes on in a process of its own, in its own session (supervise/spawned.py); its console goes to
    the sweep record. Its inputs travel pickled on its stdin."""
    try:
        proc = spawned.start("launcher.sweeps.execute:driver_main", record.file("console.log"), ctx.base_dir)
    except OSError as e:
        raise KitError(f"could not start the sweep's driver: {e}") from None
    # Recorded before the driver gets its inputs (it writes nothing until then), so a `kit cancel` right after
    # finds it and the two never race on the record.
    record.update(state=RunState.RUNNING, driver_pid=proc.pid, driver_start=tree.started_at(proc.pid))
    spawned.hand_over(proc, (plan, record.path, ctx, todo))


def driver_main() -> None:
    """The detached driver's process."""
    from launcher.sweeps.record import SweepRecord

    code = 1
    try:
        plan, path, ctx, todo = spawned.inputs()
        code = Driver(plan, SweepRecord(path), ctx, todo, Console(sys.stdout)).run()
    except BaseException:
        traceback.print_exc()
    finally:
        leave(code)


def run_sweep(plan, resolved_job, resolved_cluster, detach: bool, base_dir: Optional[str] = None):
    """Run the sweep: followed to its end (its exit code), or detached (its record, returned at once)."""
    base_dir = base_dir or os.getcwd()
    backend = registry.backend(plan.backend)
    binding = registry.placement(plan.backend).binding(resolved_cluster, resolved_job)
    backend.use(binding)
    root = backend.record_root(resolved_cluster.workdir, base_dir)
    run_root = os.path.normpath(os.path.join(root, resolved_cluster.run_root))
    ctx = SweepContext(
        job=resolved_job,
        cluster=resolved_cluster,
        spec=plan.spec,
        base_dir=base_dir,
        run_root=run_root,
        binding=binding,
    )
    if warning := dropped_warning(plan.trials[0].plan, os.environ):
        log.warning(warning)
    # The checks `kit submit` makes, once, on the first trial: a wrong entrypoint, python or host stops the sweep
    # here (one line, exit 2) before anything is written. Each trial checks again before it starts.
    try:
        backend.check(plan.trials[0].plan, base_dir)
    except KeyboardInterrupt:
        raise KitError("interrupted during the checks; nothing was started") from None
    finally:
        backend.release()  # SSH: the waiting launch channels closed unused, before trials are forked
    _refuse_an_earlier_id(plan, run_root)
    if plan.spec.uses_study:
        _need_optuna()
    record = open_sweep(run_root, plan)
    _refuse_if_running(record)
    # A re-run checks sweep.metric against the trials that succeeded before, before anything starts.
    if problem := metric_problem(record, run_root):
        raise KitError(
            f"sweep {plan.sweep_id}: {problem}; nothing was started (fix sweep.metric: the trials that "
            f"succeeded are kept)"
        )
    record.update(
        workdir=backend.outputs_here(resolved_cluster.workdir, base_dir),
        created_at=record.read().get("created_at") or time.time(),
    )
    # A re-run skips trials that succeeded and sets the others' old records aside.
    todo = trials_to_run(plan, run_root)
    if not todo:
        log.info(f"kit: sweep {plan.sweep_id}: every trial succeeded already; nothing to run")
        record.update(state=RunState.SUCCEEDED, exit_code=0, finished_at=time.time())
        if detach:
            return record
        from launcher.sweeps.table import print_status

        return print_status(run_root, plan.sweep_id)
    specs = {t.index: trial_specs(ctx, t) for t in todo}
    submitted = None if plan.spec.uses_study else backend.submit_many(plan, todo, specs, base_dir)
    if submitted is not None:
        record.update(state=RunState.RUNNING, finished_at=None, exit_code=None, **submitted)
        if detach:  # the sweep's id is the command's answer: said with -q too, as a detached run's
            log.warning(how_to(plan.sweep_id, record))
            return record
        return follow_trials(record, [t.run_id for t in todo])
    log.info(
        f"kit: sweep {plan.sweep_id}: {len(plan.trials)} trial(s), {plan.lanes} at a time; record in {record.path}"
    )
    if detach:
        _detach(plan, record, ctx, todo)
        root_arg = "" if os.path.relpath(run_root) == "runs" else f" --run-root {run_root}"
        log.warning(_how_to(record, root_arg))
        return record
    return Driver(plan, record, ctx, todo, Console(sys.stdout)).run()

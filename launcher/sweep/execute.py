"""Run a sweep: the checks once (on the first trial), its record, the trials to run; then the backend submits them
as one where it can (a SLURM job array, followed here through the trials' records), else the sweep driver
launches each trial like one `kit submit`, lane by lane (driver.py), in the foreground or detached."""

import os
import sys
import time
import traceback

from launcher.backends import registry
from launcher.errors import KitError
from launcher.launch import note
from launcher.environment import dropped_warning
from launcher.supervise import tree
from launcher.supervise.console import Console
from launcher.sweep import forked
from launcher.sweep.driver import Driver
from launcher.sweep.follow import follow_trials, how_to
from launcher.sweep.record import open_sweep
from launcher.sweep.rerun import trials_to_run
from launcher.sweep.context import SweepContext, trial_specs


def _refuse_if_running(record) -> None:
    data = record.read()
    driver = tree.same_process(data.get("driver_pid"), data.get("driver_start"))
    if driver is not None:
        raise KitError(f"sweep {record.sweep_id} is running already (kit, pid {driver.pid}); follow it with "
                       f"`kit sweep status {record.sweep_id}` or stop it with `kit cancel {record.sweep_id}`")


def _how_to(record, root_arg: str) -> str:
    s = record.sweep_id
    return (f"kit: sweep {s} detached; follow it with `kit sweep status {s}{root_arg}` (a trial: `kit logs "
            f"{s}-tN{root_arg}`), stop it with `kit cancel {s}{root_arg}`")


def _detach(plan, record, ctx: SweepContext, todo, root_arg: str) -> int:
    """The driver goes on in a forked child in its own session; its console goes to the sweep record."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        # Recorded before we return, so a `kit cancel` right after finds the driver.
        record.update(state="running", driver_pid=pid, driver_start=tree.same_process(pid, None).create_time())
        print(_how_to(record, root_arg), file=sys.stderr)
        return 0
    code = 1
    try:
        os.setsid()
        forked.output_to(record.file("console.log"))
        code = Driver(plan, record, ctx, todo, Console(sys.stdout, sys.stderr)).run()
    except BaseException:
        traceback.print_exc()
    finally:
        forked.leave(code)


def run_sweep(plan, resolved_job, resolved_cluster, detach: bool, base_dir: str = None) -> int:
    base_dir = base_dir or os.getcwd()
    backend = registry.backend(plan.backend)
    binding = registry.placement(plan.backend).binding(resolved_cluster, resolved_job)
    backend.use(binding)
    root = backend.record_root(resolved_cluster.workdir, base_dir)
    run_root = os.path.normpath(os.path.join(root, resolved_cluster.run_root))
    ctx = SweepContext(job=resolved_job, cluster=resolved_cluster, spec=plan.spec, base_dir=base_dir,
                       run_root=run_root, binding=binding)
    if warning := dropped_warning(plan.trials[0].plan, os.environ):
        note(warning)
    # The checks `kit submit` makes, once, on the first trial: a wrong entrypoint, python or host stops the sweep
    # here (one line, exit 2) before anything is written. Each trial checks again before it starts.
    try:
        backend.check(plan.trials[0].plan, base_dir)
    except KeyboardInterrupt:
        raise KitError("interrupted during the checks; nothing was started") from None
    finally:
        backend.release()   # SSH: the waiting launch channels closed unused, before trials are forked
    record = open_sweep(run_root, plan)
    _refuse_if_running(record)
    record.update(workdir=backend.outputs_here(resolved_cluster.workdir, base_dir),
                  created_at=record.read().get("created_at") or time.time())
    # A re-run skips trials that succeeded and sets the others' old records aside.
    todo = trials_to_run(plan, run_root, note)
    if not todo:
        note(f"kit: sweep {plan.sweep_id}: every trial succeeded already; nothing to run")
        record.update(state="succeeded", exit_code=0, finished_at=time.time())
        from launcher.sweep.status import print_status
        return print_status(run_root, plan.sweep_id)
    submitted = backend.submit_many(plan, todo, {t.index: trial_specs(ctx, t) for t in todo}, base_dir)
    if submitted is not None:
        record.update(state="running", finished_at=None, exit_code=None, **submitted)
        if detach:
            note(how_to(plan.sweep_id, record))
            return 0
        return follow_trials(record, [t.run_id for t in todo])
    root_arg = "" if os.path.relpath(run_root) == "runs" else f" --run-root {run_root}"
    note(f"kit: sweep {plan.sweep_id}: {len(plan.trials)} trial(s), {plan.lanes} at a time; record in "
         f"{record.path}")
    if detach:
        return _detach(plan, record, ctx, todo, root_arg)
    return Driver(plan, record, ctx, todo, Console(sys.stdout, sys.stderr)).run()

"""Run a sweep: open its record, then SLURM submits one job array (slurm_array.py); local and SSH clusters run
the trials lane by lane under the sweep driver (driver.py), in the foreground or detached."""

import os
import sys
import time
import traceback

from launcher.backends import get_backend, record_root
from launcher.backends.binding import binding
from launcher.backends.environment import dropped_warning
from launcher.errors import KitError
from launcher.preflight import preflight
from launcher.supervise import tree
from launcher.supervise.console import Console
from launcher.sweep import forked
from launcher.sweep.driver import Driver
from launcher.sweep.record import open_sweep
from launcher.sweep.trial_proc import TrialContext


def _gate(plan, ctx: TrialContext) -> None:
    """The checks `kit submit` makes, once, on the first trial: a wrong entrypoint, python or host stops the
    sweep here (one line, exit 2) before anything is written. Each trial checks again before it starts."""
    first = plan.trials[0].plan
    backend = get_backend(plan.backend)
    if hasattr(backend, "use"):
        backend.use(binding(plan.backend, ctx.cluster, ctx.job))
    preflight(first, ctx.job, ctx.cluster, ctx.base_dir)
    backend.check(first)
    if hasattr(backend, "release"):   # SSH: the waiting launch channels closed unused, before trials are forked
        backend.release()


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


def _detach(plan, record, ctx: TrialContext, root_arg: str) -> int:
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
        code = Driver(plan, record, ctx, Console(sys.stdout, sys.stderr)).run()
    except BaseException:
        traceback.print_exc()
    finally:
        forked.leave(code)


def run_sweep(plan, job, cluster, resolved_job, resolved_cluster, args) -> int:
    base_dir = os.getcwd()
    base = record_root(get_backend(plan.backend), resolved_cluster.workdir, base_dir)
    run_root = os.path.normpath(os.path.join(base, resolved_cluster.run_root))
    ctx = TrialContext(job=resolved_job, cluster=resolved_cluster, spec=plan.spec, base_dir=base_dir,
                       record_base=base, run_root=run_root)
    if warning := dropped_warning(plan.trials[0].plan, os.environ):
        print(warning, file=sys.stderr)
    if plan.backend == "slurm":
        from launcher.sweep.slurm_array import run_array
        record = open_sweep(run_root, plan)
        record.update(workdir=os.path.normpath(os.path.join(base_dir, resolved_cluster.workdir)))
        return run_array(plan, record, job, cluster, resolved_job, resolved_cluster, args)
    try:
        _gate(plan, ctx)
    except KeyboardInterrupt:
        raise KitError("interrupted during the checks; nothing was started") from None
    record = open_sweep(run_root, plan)
    _refuse_if_running(record)
    workdir = None if plan.backend == "ssh" else os.path.normpath(os.path.join(base_dir, resolved_cluster.workdir))
    record.update(workdir=workdir, created_at=record.read().get("created_at") or time.time())
    root_arg = "" if os.path.relpath(run_root) == "runs" else f" --run-root {run_root}"
    print(f"kit: sweep {plan.sweep_id}: {len(plan.trials)} trial(s), {plan.lanes} at a time; record in "
          f"{record.path}", file=sys.stderr, flush=True)
    if args.detach:
        return _detach(plan, record, ctx, root_arg)
    return Driver(plan, record, ctx, Console(sys.stdout, sys.stderr)).run()

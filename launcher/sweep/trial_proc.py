"""One trial of a local or SSH sweep, in a forked child of the sweep driver: exactly what `kit submit` does for
one plan (checks, run record, the backend's supervised execution), on the trial's plan as the dry-run shows it.

The child is the trial's supervisor, in a session of its own (a terminal's Ctrl-C reaches the driver only,
which forwards it). It holds the read end of a pipe from the driver: if the driver dies, even by kill -9, the
pipe reads EOF and the child stops its trial, as a node's watchdog does when kit dies."""

import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass

from launcher import runs
from launcher.backends import get_backend
from launcher.backends.binding import binding
from launcher.commands.outcome import outcome_line
from launcher.errors import KitError
from launcher.preflight import preflight
from launcher.sweep import forked, metrics
from launcher.sweep.trials import Trial, trial_job


@dataclass(frozen=True)
class TrialContext:
    job: object              # the resolved job (overrides applied); each trial applies its values on top
    cluster: object          # the resolved cluster
    spec: object             # the sweep spec
    base_dir: str            # where `kit submit` ran
    record_base: str         # runs.create's root: the records go to <record_base>/<run_root>/<run id>
    run_root: str            # absolute: the sweep's and the trials' records


class _Cancelled(Exception):
    """A stop request that came before the backend's own signal handling took over: nothing has started."""


class _EarlyStop:
    """SIGTERM/SIGINT before the nodes start: abort (nothing runs yet). Once the record says anything but
    `starting`, the backend's own handler did the work (or the run is over): ignore it."""

    def __init__(self):
        self.record = None

    def __call__(self, signum, _frame):
        if self.record is None or self.record.read_status().get("state") == "starting":
            raise _Cancelled()


def _watch_driver(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 64):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    os.kill(os.getpid(), signal.SIGTERM)


def _check(backend, plan, ctx: TrialContext) -> None:
    if hasattr(backend, "use"):
        backend.use(binding(plan.backend, ctx.cluster, ctx.job))
    preflight(plan, ctx.job, ctx.cluster, ctx.base_dir)
    backend.check(plan)


def _keep_metrics(backend, trial, record, ctx: TrialContext) -> None:
    try:
        if trial.plan.backend == "ssh":
            metrics.keep_remote(record.path, backend, trial.plan, trial.output_dir, ctx.spec.metrics_file)
        else:
            metrics.keep_local(record.path, ctx.base_dir, trial.plan, trial.output_dir, ctx.spec.metrics_file)
    except (OSError, KitError) as e:
        print(f"kit: could not keep a copy of the trial's {ctx.spec.metrics_file}: {e}", file=sys.stderr)


def _run(trial, ctx: TrialContext, driver_fd: int) -> int:
    stop = _EarlyStop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=_watch_driver, args=(driver_fd,), daemon=True).start()
    plan, record = trial.plan, None
    try:
        backend = get_backend(plan.backend)
        _check(backend, plan, ctx)
        tjob = trial_job(ctx.job, ctx.spec, Trial(trial.index, trial.params), trial.output_dir)
        record = runs.create(ctx.record_base, plan, tjob, trial.cluster or ctx.cluster)
        stop.record = record
        print(f"kit: run {plan.run_id} ({plan.world.world_size} processes on {len(plan.nodes)} node(s)); "
              f"record in {record.path}", file=sys.stderr, flush=True)
        code, state, failure = backend.execute(plan, record, ctx.base_dir)
    except _Cancelled:
        if record is not None:
            record.update_status(state="cancelled", exit_code=143, finished_at=time.time())
        print(f"kit: run {plan.run_id} cancelled before it started", file=sys.stderr, flush=True)
        return 143
    except KitError as e:
        print(f"kit: error: {e}", file=sys.stderr, flush=True)
        if record is not None and record.read_status().get("state") == "starting":
            record.update_status(state="failed", exit_code=e.exit_code, finished_at=time.time())
        return e.exit_code
    print(outcome_line(plan.run_id, state, code, failure), file=sys.stderr, flush=True)
    _keep_metrics(backend, trial, record, ctx)
    return code


def start_trial(trial, ctx: TrialContext, console_path: str, close_fds=()) -> tuple[int, int]:
    """Fork the trial's supervisor; (its pid, the write end of its driver pipe) for the driver."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(read_fd)
        return pid, write_fd
    code = 1
    try:
        os.setsid()
        os.close(write_fd)
        for fd in close_fds:  # the other trials' pipes: each must see EOF only when the driver is gone
            os.close(fd)
        forked.output_to(console_path, truncate=True)
        code = _run(trial, ctx, read_fd)
    except BaseException:
        traceback.print_exc()
    finally:
        forked.leave(code)

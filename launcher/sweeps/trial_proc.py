"""What every trial of a sweep shares (SweepContext: the resolved specs, where records go, the backend's binding),
the specs a trial's record keeps, and the two ends of a forked child (the detached sweep driver, a trial's
supervisor: output to a file, never back into the parent's code path).

One trial of a sweep run lane by lane, in a forked child of the sweep driver: exactly what `kit submit` does
for one plan (core/launch.py: checks, run record, the backend's supervised execution), on the trial's plan as the
dry-run shows it; then a copy of its metrics file into its record.

The child is the trial's supervisor, in a session of its own (a terminal's Ctrl-C reaches the driver only,
which forwards it). It holds the read end of a pipe from the driver: if the driver dies, even by kill -9, the
pipe reads EOF and the child stops its trial, as a node's watchdog does when kit dies; where the scheduler keeps
the job after its supervisor lets go (SLURM), that stop is the job's cancel in the queue, as a pruned trial's is,
so that the same command again runs the trial once more and never beside its old job."""

import logging
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import NoReturn

from launcher.backends import registry
from launcher.core.launch import Prepared, launch
from launcher.errors import KitError, render
from launcher.logs import child_level, setup_console
from launcher.records import spec_record
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.sweep import SweepSpec
from launcher.states import RunState
from launcher.sweeps import metrics
from launcher.sweeps.cancel import cancel_when_submitted
from launcher.sweeps.trials import Trial, trial_job

# The two ends of a forked child (the detached sweep driver, a trial's supervisor): its output goes to a file, and
# it never returns into the parent's code path.


def output_to(path: str, truncate: bool = False) -> None:
    """stdin from /dev/null; stdout and stderr to `path`."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else os.O_APPEND)
    console = os.open(path, flags, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    for fd, target in ((null, 0), (console, 1), (console, 2)):
        os.dup2(fd, target)


def leave(code: int) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# What every trial of a sweep shares (the resolved specs, where records go, the backend's binding), and the specs a
# trial's run record keeps.


@dataclass(frozen=True)
class SweepContext:
    job: JobSpec  # the resolved job (overrides applied); each trial applies its values on top
    cluster: ClusterSpec  # the resolved cluster
    spec: SweepSpec  # the sweep spec
    base_dir: str  # where `kit submit` ran
    run_root: str  # absolute: the sweep's and the trials' records
    binding: object  # the backend's settings (Placement.binding)


def trial_specs(ctx: SweepContext, trial) -> tuple[dict, dict]:
    """(job record, cluster record) of one trial's run record: the trial's own job, its lane's cluster."""
    tjob = trial_job(ctx.job, ctx.spec, Trial(trial.index, trial.params), trial.output_dir)
    return spec_record(tjob, trial.plan), spec_record(trial.cluster or ctx.cluster, trial.plan)


log = logging.getLogger(__name__)


class _Cancelled(Exception):
    """A stop request that came before the backend's own signal handling took over: nothing has started."""


class _EarlyStop:
    """SIGTERM/SIGINT before the nodes start: abort (nothing runs yet). Once the record says anything but
    `starting`, the backend's own handler did the work (or the run is over): ignore it."""

    def __init__(self):
        self.record = None

    def __call__(self, signum, _frame):
        if self.record is None or self.record.read_status().state == RunState.STARTING:
            raise _Cancelled()


def _watch_driver(fd: int, stop: _EarlyStop, backend) -> None:
    while True:
        try:
            if not os.read(fd, 64):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    if getattr(backend, "outlives_supervisor", False) and stop.record is not None:
        # The job is cancelled in the queue once its id is known (no signal here: one while sbatch is under way
        # would abort the submission and leave a job nobody cancels); the supervisor keeps following it to its
        # cancelled end and records it.
        cancel_when_submitted(stop.record)
        return
    os.kill(os.getpid(), signal.SIGTERM)


def _keep_metrics(backend, trial, record, ctx) -> None:
    try:
        content = backend.read_output(
            trial.plan, ctx.base_dir, os.path.join(trial.output_dir, ctx.spec.metrics_file), metrics.MAX_BYTES
        )
        if content is not None:
            metrics.save(record.path, content)
    except (OSError, KitError) as e:
        log.warning(f"kit: could not keep a copy of the trial's {ctx.spec.metrics_file}: {e}")


def _run(trial, ctx, driver_fd: int) -> int:
    stop = _EarlyStop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    plan = trial.plan
    backend = registry.backend(plan.backend)
    threading.Thread(target=_watch_driver, args=(driver_fd, stop, backend), daemon=True).start()
    job_record, cluster_record = trial_specs(ctx, trial)
    prepared = Prepared(
        plan, (trial.cluster or ctx.cluster).workdir, job_record, cluster_record, ctx.binding, trial.inputs
    )
    try:
        launched = launch(
            prepared,
            ctx.base_dir,
            backend=backend,
            on_checked=lambda: setattr(stop, "record", _record_of(backend, prepared, ctx)),
        )
    except _Cancelled:
        record = stop.record
        if record is not None:
            record.update_status(state=RunState.CANCELLED, exit_code=143, finished_at=time.time())
        log.warning(f"kit: run {plan.run_id} cancelled before it started")
        return 143
    except KitError as e:
        log.error(f"kit: error: {render(e)}")
        record = stop.record
        if record is not None and record.read_status().state == RunState.STARTING:
            record.update_status(state=RunState.FAILED, exit_code=e.exit_code, finished_at=time.time())
        return e.exit_code
    _keep_metrics(backend, trial, launched.record, ctx)
    assert launched.result is not None  # followed to its end (launch without detach)
    return launched.result.code


def _record_of(backend, prepared, ctx):
    from launcher.records import RunRecord

    root = backend.record_root(prepared.workdir, ctx.base_dir)
    return RunRecord(os.path.join(root, prepared.plan.run_dir))


def start_trial(trial, ctx, console_path: str, close_fds=()) -> tuple[int, int]:
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
        output_to(console_path, truncate=True)
        setup_console(child_level())  # its console file holds every line kit says, whatever -q the driver had
        code = _run(trial, ctx, read_fd)
    except BaseException:
        traceback.print_exc()
    finally:
        leave(code)

"""The one launch pipeline: checks -> record -> deliver or detach -> outcome. `kit submit`, every trial of a sweep
and the Python API start runs through `launch()`; what differs per backend is the backend's (backends/base.py)."""

import logging
import os
from dataclasses import dataclass
from typing import Callable, Optional

from launcher import records, run_index
from launcher.backends.attempts import run_attempts
from launcher.backends import registry
from launcher.backends.base import Result
from launcher.core import listing
from launcher.environment import dropped_warning
from launcher.errors import KitError, one_line
from launcher.planning.inputs import PlanInputs, replanner
from launcher.planning.model import LaunchPlan
from launcher.status import NOT_OVER
from launcher.supervise import tree
from launcher.supervise.disk import with_disk_cause
from launcher.supervise.failure import outcome_level, outcome_line

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A planned run and what the pipeline needs besides the plan, as plain data (no pydantic models, so it
    pickles: it may come from the forked planner, commands/planner.py)."""

    plan: LaunchPlan
    workdir: str  # the cluster's workdir (where a local or SLURM run keeps its record)
    job_record: dict  # the resolved specs as the run record keeps them, secrets masked
    cluster_record: dict
    binding: Optional[dict]  # the backend's settings from the specs (its use()), or None
    inputs: Optional[PlanInputs] = None  # what the planner was given: a restart's plan is built from them


@dataclass(frozen=True)
class Launched:
    record: records.RunRecord
    result: Optional[Result]  # None when detached: the run goes on without this process


def launch(
    prepared: Prepared,
    base_dir: str,
    *,
    detach: bool = False,
    backend=None,
    console=None,
    on_checked: Optional[Callable[[], None]] = None,
) -> Launched:
    """Check, write the record (taken back exactly if a check fails), then run the plan: followed to its end, or
    detached. Raises KitError (one line, nothing started) for anything the checks find."""
    plan = prepared.plan
    backend = backend or registry.backend(plan.backend)
    if warning := dropped_warning(plan, os.environ):
        log.warning(warning)
    log.debug("kit: debug: run %s: backend %s (%s)", plan.run_id, plan.backend, type(backend).__module__)
    backend.use(prepared.binding)
    root = backend.record_root(prepared.workdir, base_dir)
    refuse_a_taken_id(plan.run_id, os.path.join(root, plan.run_dir))
    # The record is written before the checks: an SSH run's checks wait for the hosts' logins, and the record
    # is then off the way from the last check's answer to the nodes' start. Checks that fail take it back.
    with records.tentative(root, plan, prepared.job_record, prepared.cluster_record) as record:
        # This process follows the run until a backend says otherwise: if it dies during the checks (kill -9),
        # the record reads "lost", not "starting" for ever.
        record.update_status(supervisor_pid=os.getpid(), supervisor_start=tree.started_at(os.getpid()))
        backend.check(plan, base_dir)
        # Again, as late as can be: a run of this id from another run root may have started during the checks.
        refuse_a_taken_id(plan.run_id, record.path)
    # `kit status RUN` finds it from any directory; its entry read under the record's lock (no write in between)
    run_index.remember(record.path, entry=lambda: listing.entry_under_lock(record.path))
    if on_checked is not None:
        on_checked()
    procs, nodes = plan.world.world_size, len(plan.nodes)
    for text in plan.notes:  # where host health moved the nodes (planning/health.py)
        log.warning(f"kit: {text}")
    log.info(
        f"kit: run {plan.run_id} ({procs} process{'es' * (procs != 1)} on {nodes} node{'s' * (nodes != 1)}); "
        f"record in {record.path}"
    )
    if detach:
        backend.detach(plan, record, base_dir, prepared.inputs)
        return Launched(record, None)
    result = with_disk_cause(
        run_attempts(backend, plan, record, base_dir, console, replanner(prepared.inputs, plan)), record
    )
    log.log(outcome_level(result.state), outcome_line(plan.run_id, result.state, result.code, result.failure))
    return Launched(record, result)


def refuse_a_taken_id(run_id: str, path: Optional[str] = None) -> None:
    """A run id names one run wherever it is: `kit status / logs / cancel RUN` and `kit runs` find it from any
    directory through kit's index. A run id the index holds already, for a run in any run root and in any state, is
    refused (else two runs answer to one name, and which one `kit status` shows depends on the directory); a
    record deleted since no longer holds its name. `path`: this run's own record, which is not a namesake (the
    check made again after the checks); without it (at plan time, a dry-run too) any indexed run of the id is.
    A live namesake's state is asked of its backend; one it cannot tell now (a login host away) still holds."""
    other = run_index.where(run_id) if path is None else run_index.namesake(run_id, path)
    if other is None:
        return
    record = records.RunRecord(other)
    status = record.read_status()
    if status.state not in NOT_OVER:
        raise KitError(
            f"run id {run_id} is taken by a run that ended ({status.state or 'no state recorded'}) ",
            run_index.taken(run_id, other, live=False),
        )
    where = run_index.taken(run_id, other)
    try:  # the file's word may be stale (a supervisor killed): its backend says how the run stands now
        state, _ = registry.backend(status.backend).current_state(record, status)
    except Exception as e:  # any failure to ask (a raw SSH or SFTP error too): the name stays taken
        raise KitError(
            f"run id {run_id} is taken by a run recorded {status.state}, whose state kit cannot ask "
            f"now ({one_line(str(e)) or type(e).__name__}), ",
            where,
        ) from None
    if state in NOT_OVER:
        raise KitError(f"run id {run_id} is taken by a run still {state} ", where)
    raise KitError(f"run id {run_id} is taken by a run that ended ({state}) ", run_index.taken(run_id, other, False))

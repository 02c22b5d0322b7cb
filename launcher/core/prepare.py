"""A submission's first half, for both faces: load and validate the specs a Request names, build the plan, and keep
what the launch pipeline needs as plain data (launch.Prepared), the schemas (pydantic) left behind. Plain data,
because this half may run in a forked process (commands/planner.py) while kit logs in to the hosts."""

import sys
import time
from dataclasses import dataclass
from typing import Any, Optional

from launcher.backends import registry
from launcher.core.launch import Prepared
from launcher.core.request import Request
from launcher.planning.model import LaunchPlan


@dataclass(frozen=True)
class Loaded:
    """The specs of one submission, validated, as given and with the overrides applied."""

    job: Any
    cluster: Any
    overrides: Any
    resolved_job: Any
    resolved_cluster: Any
    sweep: Any  # the sweep spec, when the submission is a sweep
    default_python: str
    built: bool = False  # the job was built from the command line (a script or -m MODULE), not read from a file
    failed_hosts: tuple = ()  # ((host, why), ...): hosts that failed lately, from the records (insight/health.py)


def new_run_id(job_name: str) -> str:
    import secrets  # not before the early logins start: 10 ms

    return f"{job_name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def overrides_from(request: Request):
    from launcher.spec import Overrides

    return Overrides(
        nodes=request.nodes,
        gpus=request.gpus,
        procs_per_node=request.procs_per_node,
        strategy=request.strategy,
        mixed_precision=request.mixed_precision,
        master_port=request.port,
        sets=tuple(request.sets),
        extra_args=tuple(request.args),
    )


def job_of(request: Request):
    """The job a request names: a job spec file, or one built from a script or `-m MODULE`."""
    from launcher.spec import load_job
    from launcher.spec.adhoc import command_line_job, is_script

    if request.module is not None:
        return command_line_job(module=request.module)
    if is_script(request.job):
        return command_line_job(script=request.job)
    return load_job(request.job)


def load(request: Request) -> Loaded:
    from launcher.spec import apply_overrides, load_cluster, sweep_of

    job = job_of(request)
    cluster = load_cluster(request.cluster)
    overrides = overrides_from(request)
    resolved_job, resolved_cluster = apply_overrides(job, cluster, overrides)
    # A local cluster with no `python:` runs kit's own interpreter, so the venv kit lives in is used.
    default_python = sys.executable if registry.placement(resolved_cluster.backend).nodes_run_kits_python else "python"
    return Loaded(
        job,
        cluster,
        overrides,
        resolved_job,
        resolved_cluster,
        sweep_of(job, request.job or f"-m {request.module}", request.sweep),
        default_python,
        request.built,
        failed_hosts_of(resolved_cluster),
    )


def failed_hosts_of(cluster) -> tuple:
    """The hosts the planner should place away from (read from the records: the planner reads nothing)."""
    scope = registry.placement(cluster.backend).health_scope(cluster)
    if scope is None:
        return ()
    from launcher.insight.health import failed_hosts

    return failed_hosts(cluster.backend, list(scope) or None)


def plan_for(loaded: Loaded, run_id: Optional[str], attempt: int = 1) -> LaunchPlan:
    """The plan of the resolved specs (the overrides were applied once, by load); `attempt` k > 1: the plan a
    restart would run (the dry-run's --attempt). A run id given that names a run kit knows already is refused
    here, so the dry-run says it too."""
    from launcher.errors import KitError
    from launcher.planning.attempt import Attempt
    from launcher.planning.build import build_plan
    from launcher.spec import Overrides, load_user_deepspeed

    restarts = loaded.resolved_job.restarts
    if attempt > restarts + 1:
        raise KitError(
            f"--attempt {attempt}: the job's restarts is {restarts}, so its last attempt is "
            f"{restarts + 1}; raise it (--set restarts={attempt - 1}) or ask for an earlier attempt"
        )
    if run_id is not None:
        from launcher.core.launch import refuse_a_taken_id

        refuse_a_taken_id(run_id)
    plan = build_plan(
        loaded.resolved_job,
        loaded.resolved_cluster,
        Overrides(),
        run_id or new_run_id(loaded.job.name),
        default_python=loaded.default_python,
        user_deepspeed=load_user_deepspeed(loaded.resolved_job),
        attempt=Attempt(attempt),
        failed_hosts=loaded.failed_hosts,
    )
    # What only this machine can tell (an SSH cluster's sync file list), added here at the edge, not by the planner.
    edge = at_edge(plan, loaded.resolved_cluster, loaded.resolved_job)
    check_code(edge, loaded.resolved_job)
    return edge.plan


def at_edge(plan: LaunchPlan, cluster, job=None):
    """The backend's Edge of the plan (planning/placement.py): the plan with what only this machine can tell
    added, and where the nodes' code is seen from here (the directory kit runs in)."""
    import os

    return registry.placement(cluster.backend).at_edge(cluster, plan, job, cwd=os.getcwd())


def check_code(edge, job) -> None:
    """The checks this machine makes before anything starts, a dry-run's too (preflight/here.py), on an Edge's
    plan: secrets set; the entrypoint there, compiling, its modules synced, DeepSpeed on CPU asking for gloo,
    where kit sees the code (the Edge's code_dir)."""
    import os
    from launcher.preflight.here import check_here

    check_here(edge.plan, job.entrypoint, job.args, edge.code_dir, os.environ)


def dry_checks(loaded: Loaded, plan: LaunchPlan) -> None:
    """What else a run checks before it starts, for a dry-run: the backend's checks that stay on this machine (the
    hosts are not reached)."""
    import os

    from launcher.planning.placement import DRY

    cluster = loaded.resolved_cluster
    registry.placement(cluster.backend).validate(
        cluster, DRY, plan=plan, entrypoint=loaded.resolved_job.entrypoint, base_dir=os.getcwd()
    )


def prepare(loaded: Loaded, plan: LaunchPlan) -> Prepared:
    """The plain data for the launch: the backend's binding (a key file it names that is missing is a one-line
    error here) and the specs as the record keeps them."""
    from launcher.planning.inputs import PlanInputs
    from launcher.planning.placement import RUN
    from launcher.records import spec_record
    from launcher.spec import load_user_deepspeed

    job, cluster = loaded.resolved_job, loaded.resolved_cluster
    placement = registry.placement(cluster.backend)
    placement.validate(cluster, RUN)  # first: the checks' logins use them
    bound = placement.binding(cluster, job)
    inputs = PlanInputs.of(
        job, cluster, plan.run_id, loaded.default_python, load_user_deepspeed(job), loaded.failed_hosts
    )
    return Prepared(plan, cluster.workdir, spec_record(job, plan), spec_record(cluster, plan), bound, inputs)


def prepared_for(request: Request) -> Optional[Prepared]:
    """The whole first half of a real (not dry) submission; None when it is a sweep (run another way)."""
    loaded = load(request)
    if loaded.sweep is not None:
        return None
    return prepare(loaded, plan_for(loaded, request.run_id))


__all__ = [
    "Request",
    "Loaded",
    "Prepared",
    "load",
    "plan_for",
    "at_edge",
    "check_code",
    "dry_checks",
    "prepare",
    "prepared_for",
    "new_run_id",
    "overrides_from",
]

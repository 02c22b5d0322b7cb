"""A sweep's start, for both faces: its plan (every trial's, with what only this machine can tell added and checked,
as a run's plan is in core/prepare.py), then its record and trials (execute.py)."""

import dataclasses

from launcher.backends import registry
from launcher.core.prepare import Loaded, at_edge, check_code
from launcher.spec import load_user_deepspeed
from launcher.sweeps.execute import run_sweep
from launcher.sweeps.plan import SweepPlan, plan_sweep


def trials_at_edge(plan: SweepPlan, cluster, job=None) -> SweepPlan:
    """Each trial's plan with what only this machine can tell (an SSH cluster's sync file list) added, and checked
    here as a run's plan is, once per kind of trial (strategy, device) when the trials vary those."""
    edges = [at_edge(t.plan, t.cluster or cluster, job) for t in plan.trials]
    trials = tuple(dataclasses.replace(t, plan=edge.plan) for t, edge in zip(plan.trials, edges))
    checked = set()
    for edge in edges if job is not None else ():
        kind = (edge.plan.world.strategy, edge.plan.world.device)
        if kind not in checked:
            checked.add(kind)
            check_code(edge, job)
    return dataclasses.replace(plan, trials=trials)


def sweep_plan(loaded: Loaded, sweep_id) -> SweepPlan:
    """The sweep's plan from the loaded specs (`sweep_id`: None for the one its inputs name)."""
    plan = plan_sweep(
        loaded.job,
        loaded.sweep,
        loaded.cluster,
        loaded.overrides,
        sweep_id=sweep_id,
        default_python=loaded.default_python,
        user_deepspeed=load_user_deepspeed(loaded.resolved_job),
    )
    return trials_at_edge(plan, loaded.resolved_cluster, loaded.resolved_job)


def start_sweep(loaded: Loaded, plan: SweepPlan, detach: bool):
    """Run the planned sweep: followed to its end (its exit code), or detached (its record, returned at once)."""
    from launcher.planning.placement import RUN

    registry.placement(loaded.resolved_cluster.backend).validate(loaded.resolved_cluster, RUN)
    return run_sweep(plan, loaded.resolved_job, loaded.resolved_cluster, detach)

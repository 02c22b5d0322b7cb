"""A sweep's start, for both faces: its plan (every trial's, with what only this machine can tell added and checked,
as a run's plan is in core/prepare.py), then its record and trials (execute.py)."""

import dataclasses

from launcher.backends import registry
from launcher.core.prepare import Loaded, check_code
from launcher.spec import load_user_deepspeed
from launcher.sweeps.execute import run_sweep
from launcher.sweeps.plan import SweepPlan, plan_sweep


def at_edge(plan: SweepPlan, cluster, job=None) -> SweepPlan:
    """Each trial's plan with what only this machine can tell (an SSH cluster's sync file list) added, and checked
    here as a run's plan is, once per kind of trial (strategy, device) when the trials vary those."""
    placement = registry.placement(cluster.backend)
    trials = tuple(
        dataclasses.replace(t, plan=placement.at_edge(t.plan, t.cluster or cluster, job)) for t in plan.trials
    )
    checked = set()
    for trial in trials if job is not None else ():
        kind = (trial.plan.world.strategy, trial.plan.world.device)
        if kind not in checked:
            checked.add(kind)
            check_code(trial.plan, job, trial.cluster or cluster)
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
    return at_edge(plan, loaded.resolved_cluster, loaded.resolved_job)


def start_sweep(loaded: Loaded, plan: SweepPlan, detach: bool):
    """Run the planned sweep: followed to its end (its exit code), or detached (its record, returned at once)."""
    registry.placement(loaded.resolved_cluster.backend).check_files(loaded.resolved_cluster)
    return run_sweep(plan, loaded.resolved_job, loaded.resolved_cluster, detach)

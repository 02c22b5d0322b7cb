"""`kit submit` of a job with a sweep (or `--sweep FILE`), and `kit sweep status`."""

import sys

from launcher.render.sweep import render_sweep_json, render_sweep_text
from launcher.spec import load_user_deepspeed
from launcher.sweeps.plan import plan_sweep


def at_edge(plan, cluster, job=None):
    """Each trial's plan with what only this machine can tell (an SSH cluster's sync file list) added, and checked
    here as a run's plan is (core/prepare.py), once per kind of trial (strategy, device) when the trials vary
    those."""
    import dataclasses
    from launcher.backends import registry
    from launcher.core.prepare import check_code
    placement = registry.placement(cluster.backend)
    trials = tuple(dataclasses.replace(t, plan=placement.at_edge(t.plan, t.cluster or cluster, job))
                   for t in plan.trials)
    checked = set()
    for trial in trials if job is not None else ():
        kind = (trial.plan.world.strategy, trial.plan.world.device)
        if kind not in checked:
            checked.add(kind)
            check_code(trial.plan, job, trial.cluster or cluster)
    return dataclasses.replace(plan, trials=trials)


def submit_sweep(args, loaded) -> int:
    plan = plan_sweep(loaded.job, loaded.sweep, loaded.cluster, loaded.overrides, sweep_id=args.run_id,
                      default_python=loaded.default_python, user_deepspeed=load_user_deepspeed(loaded.resolved_job))
    plan = at_edge(plan, loaded.resolved_cluster, loaded.resolved_job)
    if args.dry_run:
        from launcher.core.prepare import dry_checks
        dry_checks(loaded, plan.trials[0].plan)
        sys.stdout.write(render_sweep_json(plan) if args.format == "json" else render_sweep_text(plan))
        return 0
    from launcher.spec import check_ssh_files
    from launcher.sweeps.execute import run_sweep
    check_ssh_files(loaded.resolved_cluster)
    ran = run_sweep(plan, loaded.resolved_job, loaded.resolved_cluster, args.detach)
    return 0 if args.detach else ran


def sweep_status(args) -> int:
    from launcher.core.lookup import latest_sweep_root, root_of
    from launcher.sweeps.status import print_status
    root = root_of(args.run_root, args.sweep_id) if args.sweep_id else latest_sweep_root(args.run_root)
    return print_status(root, args.sweep_id, args.format)

"""`kit submit` of a job with a sweep (or `--sweep FILE`), and `kit sweep status`."""

import sys

from launcher.render.sweep import render_sweep_json, render_sweep_text
from launcher.spec import load_user_deepspeed
from launcher.sweep.plan import plan_sweep


def submit_sweep(args, job, cluster, overrides, resolved_job, resolved_cluster, spec, default_python) -> int:
    plan = plan_sweep(job, spec, cluster, overrides, sweep_id=args.run_id, default_python=default_python,
                      user_deepspeed=load_user_deepspeed(resolved_job))
    if args.dry_run:
        sys.stdout.write(render_sweep_json(plan) if args.format == "json" else render_sweep_text(plan))
        return 0
    from launcher.sweep.execute import run_sweep
    return run_sweep(plan, job, cluster, resolved_job, resolved_cluster, args)


def sweep_status(args) -> int:
    from launcher.sweep.status import print_status
    return print_status(args.run_root, args.sweep_id, args.format)

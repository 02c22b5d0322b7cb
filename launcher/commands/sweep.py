"""`kit submit` of a job with a sweep (or `--sweep FILE`), and `kit sweep status`."""

import sys


def submit_sweep(args, loaded) -> int:
    from launcher.sweeps.start import start_sweep, sweep_plan

    plan = sweep_plan(loaded, args.run_id)
    if args.dry_run:
        from launcher.core.prepare import dry_checks
        from launcher.render.sweep import render_sweep_json, render_sweep_text

        dry_checks(loaded, plan.trials[0].plan)
        sys.stdout.write(render_sweep_json(plan) if args.format == "json" else render_sweep_text(plan))
        return 0
    ran = start_sweep(loaded, plan, args.detach)
    return 0 if args.detach else ran


def sweep_status(args) -> int:
    from launcher.core.lookup import root_of
    from launcher.sweeps.record import latest_sweep_root
    from launcher.sweeps.status import print_status

    root = root_of(args.run_root, args.sweep_id) if args.sweep_id else latest_sweep_root(args.run_root)
    return print_status(root, args.sweep_id, args.format)

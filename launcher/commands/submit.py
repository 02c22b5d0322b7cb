"""`kit submit`: load -> plan -> launch, or print the plan with --dry-run. An SSH run takes the start-up fast path
(fastpath.py), which yields the same prepared launch. A job with a sweep (or `--sweep FILE`) is submitted as a
sweep; `kit sweep status` is here too."""

import os
import sys

from launcher.commands.fastpath import FastStart
from launcher.errors import KitError

# The rest of kit (schemas, plan, backends) is imported later, once the early logins have started.


def request_of(args):
    """The submission the command line names, as the core takes it."""
    from launcher.core.request import Request

    return Request(
        job=args.job,
        module=args.module,
        cluster=args.cluster,
        sweep=args.sweep,
        run_id=args.run_id,
        nodes=args.nodes,
        gpus=args.gpus,
        procs_per_node=args.procs_per_node,
        strategy=args.strategy,
        mixed_precision=args.mixed_precision,
        port=args.port,
        sets=tuple(args.set),
        args=tuple(args.args),
    )


def submit(args) -> int:
    request = request_of(args)
    with FastStart(request, dry_run=args.dry_run) as fast:
        prepared = fast.prepared()
        if prepared is None:
            from launcher.core.prepare import dry_checks, load, plan_for, prepare

            loaded = load(request)
            if loaded.sweep is not None:
                if getattr(args, "node", None) is not None:
                    raise KitError(f"--node {args.node} prints one node of a run's plan, not of a sweep; drop it")

                return submit_sweep(args, loaded)
            plan = plan_for(loaded, args.run_id, args.attempt or 1)
            if args.dry_run:
                dry_checks(loaded, plan)
                return _print_plan(plan, args.format, loaded, getattr(args, "node", None))
            prepared = prepare(loaded, plan)
        from launcher.core.launch import launch

        launched = launch(prepared, os.getcwd(), detach=args.detach, on_checked=fast.checked)
    if launched.result is None:
        run_id = prepared.plan.run_id
        if not launched.record.read_status().scheduler_job_id:  # a scheduler's job says how to follow it already
            print(
                f"kit: run {run_id} detached; follow it with `kit status {run_id}` / `kit logs {run_id}`, "
                f"stop it with `kit cancel {run_id}`",
                file=sys.stderr,
            )
        return 0
    return launched.result.code


def _print_plan(plan, fmt, loaded, node=None) -> int:
    from launcher.environment import dropped_warning
    from launcher.render.dryrun import render_json, render_text

    if node is not None and node >= len(plan.nodes):
        raise KitError(
            f"--node {node}: the plan has nodes 0 to {len(plan.nodes) - 1}; --node K prints node K, "
            f"--nodes N sets how many there are"
        )
    if warning := dropped_warning(plan, os.environ):
        print(warning, file=sys.stderr)
    if fmt == "json":
        sys.stdout.write(render_json(plan, built_job=loaded.resolved_job if loaded.built else None))
        return 0
    if loaded.built:
        sys.stdout.write(_built_job_text(loaded.resolved_job))
    sys.stdout.write(render_text(plan, node=node))
    return 0


def _built_job_text(job) -> str:
    from launcher.spec.adhoc import built_job_yaml

    body = "".join(f"  {line}\n" for line in built_job_yaml(job).splitlines())
    return f"job built from the command line (as a job file you could save and submit):\n{body}\n"


# `kit submit` of a job with a sweep (or `--sweep FILE`), and `kit sweep status`.


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
    from launcher.sweeps.table import print_status

    root = root_of(args.run_root, args.sweep_id) if args.sweep_id else latest_sweep_root(args.run_root)
    return print_status(root, args.sweep_id, args.format)

"""`kit submit`: load, plan, then either print the plan or hand it to a backend."""

import os
import sys
import time

from launcher.backends.ssh_early import close_early, log_in_early
# The rest of kit (schemas, plan, backends) is imported in submit(), once the early logins have started.


def new_run_id(job_name: str) -> str:
    import secrets   # not before the early logins start: 10 ms
    return f"{job_name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def overrides_from(args):
    from launcher.spec import Overrides
    return Overrides(
        nodes=args.nodes, gpus=args.gpus, procs_per_node=args.procs_per_node, strategy=args.strategy,
        mixed_precision=args.mixed_precision, master_port=args.port, sets=tuple(args.set),
    )


def submit(args) -> int:
    log_in_early(args)  # an SSH cluster: its hosts' logins overlap the rest of kit's start-up (ssh_early.py)
    from launcher import runs
    from launcher.backends import get_backend, record_root
    from launcher.backends.environment import dropped_warning
    from launcher.commands.outcome import outcome_line
    from launcher.plan.build import build_plan
    from launcher.preflight import preflight
    from launcher.render.dryrun import render_json, render_text
    from launcher.spec import apply_overrides, load_cluster, load_job, load_user_deepspeed
    from launcher.sweep.load import sweep_of
    job = load_job(args.job)
    cluster = load_cluster(args.cluster)
    overrides = overrides_from(args)
    resolved_job, resolved_cluster = apply_overrides(job, cluster, overrides)
    # A local cluster with no `python:` runs kit's own interpreter, so the venv kit lives in is used.
    default_python = sys.executable if resolved_cluster.backend == "local" else "python"
    spec = sweep_of(job, args.job, args.sweep)
    if spec is not None:
        close_early()
        from launcher.commands.sweep import submit_sweep
        return submit_sweep(args, job, cluster, overrides, resolved_job, resolved_cluster, spec, default_python)
    run_id = args.run_id or new_run_id(job.name)
    plan = build_plan(job, cluster, overrides, run_id, default_python=default_python,
                      user_deepspeed=load_user_deepspeed(resolved_job))
    if warning := dropped_warning(plan, os.environ):
        print(warning, file=sys.stderr)
    if args.dry_run:
        sys.stdout.write(render_json(plan) if args.format == "json" else render_text(plan))
        return 0
    backend = get_backend(plan.backend)
    if hasattr(backend, "bind"):  # remote backends need connection settings that the plan leaves out
        backend.bind(resolved_cluster, resolved_job)
    preflight(plan, resolved_job, resolved_cluster, os.getcwd())
    if plan.backend == "slurm":
        from launcher.preflight.slurm import preflight_slurm
        preflight_slurm(plan, resolved_job, resolved_cluster)
    backend.check(plan)
    base_dir = os.getcwd()
    # Paths in the plan are relative to the nodes' workdir; for a local run that is below this directory.
    record = runs.create(record_root(backend, resolved_cluster.workdir, base_dir), plan, resolved_job,
                         resolved_cluster)
    print(f"kit: run {plan.run_id} ({plan.world.world_size} processes on {len(plan.nodes)} node(s)); "
          f"record in {record.path}", file=sys.stderr, flush=True)
    if args.detach and hasattr(backend, "detach"):
        return backend.detach(plan, record, base_dir)
    if args.detach:
        return _detach(plan, record, backend, base_dir)
    code, state, failure = backend.execute(plan, record, base_dir)
    print(outcome_line(plan.run_id, state, code, failure), file=sys.stderr, flush=True)
    return code


def _detach(plan, record, backend, base_dir) -> int:
    """Supervise the run from a forked child in its own session; its output goes to the record."""
    from launcher.commands.outcome import outcome_line
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork():
        print(f"kit: run {plan.run_id} detached; follow it with `kit status {plan.run_id}` / "
              f"`kit logs {plan.run_id}`, stop it with `kit cancel {plan.run_id}`", file=sys.stderr)
        return 0
    os.setsid()
    console = os.open(record.file("console.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(console, 1)
    os.dup2(console, 2)
    code = 1
    try:
        code, state, failure = backend.execute(plan, record, base_dir)
        print(outcome_line(plan.run_id, state, code, failure), file=sys.stderr, flush=True)
    finally:
        # Never return into the parent's CLI code path from the child.
        os._exit(code)

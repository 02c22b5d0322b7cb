"""`kit submit`: load, plan, then either print the plan or hand it to a backend.

The first half (prepare.py) runs here, or, for an SSH cluster whose hosts kit logs in to early (ssh_early.py),
in a forked planner (planner.py) while this process logs in; either way the second half gets the same plain
data (Prepared)."""

import os
import sys

from launcher.backends.ssh_early import close_early, early_guess, log_in_early
# The rest of kit (schemas, plan, backends) is imported later, once the early logins have started.


def submit(args) -> int:
    guess = early_guess(args)
    planner = None
    if guess is not None:
        from launcher.commands.planner import Planner
        planner = Planner(args)   # forked first: before the logins' threads, and before their paramiko
    try:
        log_in_early(guess)
        return _submit(args, planner)
    finally:
        if planner is not None:
            planner.close()


def _submit(args, planner) -> int:
    from launcher import runs
    from launcher.backends import get_backend, record_root
    from launcher.backends.environment import dropped_warning
    from launcher.commands.outcome import outcome_line
    if planner is not None:   # an SSH run: its backend loads while the planner works
        from launcher.backends.ssh_preflight import load_ahead
        load_ahead()
    prepared = planner.result() if planner is not None else None
    if prepared is None:
        close_early()   # none, or a sweep after all: it connects per trial
        from launcher.commands.prepare import load, plan_for, prepare
        loaded = load(args)
        if loaded.sweep is not None:
            from launcher.commands.sweep import submit_sweep
            return submit_sweep(args, loaded.job, loaded.cluster, loaded.overrides, loaded.resolved_job,
                                loaded.resolved_cluster, loaded.sweep, loaded.default_python)
        plan = plan_for(loaded, args.run_id)
        if args.dry_run:
            if warning := dropped_warning(plan, os.environ):
                print(warning, file=sys.stderr)
            from launcher.render.dryrun import render_json, render_text
            sys.stdout.write(render_json(plan) if args.format == "json" else render_text(plan))
            return 0
        prepared = prepare(loaded, plan, os.getcwd())
    plan = prepared.plan
    if warning := dropped_warning(plan, os.environ):
        print(warning, file=sys.stderr)
    backend = get_backend(plan.backend)
    if prepared.binding is not None:  # remote backends need connection settings that the plan leaves out
        backend.use(prepared.binding)
    base_dir = os.getcwd()
    # Paths in the plan are relative to the nodes' workdir; for a local run that is below this directory.
    root = record_root(backend, prepared.workdir, base_dir)
    # The record is written before the checks: an SSH run's checks wait for the hosts' logins, and the record
    # is then off the way from the last check's answer to the nodes' start. Checks that fail take it back.
    with runs.tentative(root, plan, prepared.job_record, prepared.cluster_record) as record:
        backend.check(plan)
    if planner is not None:
        planner.close()   # it ended after its answer: reaped now, not left a zombie for the run's length
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
    if hasattr(backend, "release"):   # no SSH thread may be running at the fork
        backend.release()
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

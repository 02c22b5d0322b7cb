"""`kit submit`'s first half: load and validate the specs, build the plan, run the checks that need no host,
and keep what the second half (records, backend) needs as plain data, the schemas (pydantic) left behind.
Plain data, because this half may run in a forked process (planner.py) while kit logs in to the hosts."""

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Optional

from launcher.plan.model import LaunchPlan


@dataclass(frozen=True)
class Loaded:
    """The specs of one submission, validated, as given and with the overrides applied."""
    job: Any
    cluster: Any
    overrides: Any
    resolved_job: Any
    resolved_cluster: Any
    sweep: Any            # the sweep spec, when the submission is a sweep
    default_python: str


@dataclass(frozen=True)
class Prepared:
    """What a submission needs once planned and checked here: no pydantic models, so it pickles alone."""
    plan: LaunchPlan
    workdir: str                       # the cluster's workdir (where a local or SLURM run keeps its record)
    job_record: dict                   # the resolved specs as the run record keeps them, secrets masked
    cluster_record: dict
    binding: Optional[dict]            # the remote backend's settings from the specs (its use()), or None


def new_run_id(job_name: str) -> str:
    import secrets   # not before the early logins start: 10 ms
    return f"{job_name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def overrides_from(args):
    from launcher.spec import Overrides
    return Overrides(
        nodes=args.nodes, gpus=args.gpus, procs_per_node=args.procs_per_node, strategy=args.strategy,
        mixed_precision=args.mixed_precision, master_port=args.port, sets=tuple(args.set),
    )


def load(args) -> Loaded:
    from launcher.spec import apply_overrides, load_cluster, load_job
    from launcher.sweep.load import sweep_of
    job = load_job(args.job)
    cluster = load_cluster(args.cluster)
    overrides = overrides_from(args)
    resolved_job, resolved_cluster = apply_overrides(job, cluster, overrides)
    # A local cluster with no `python:` runs kit's own interpreter, so the venv kit lives in is used.
    default_python = sys.executable if resolved_cluster.backend == "local" else "python"
    return Loaded(job, cluster, overrides, resolved_job, resolved_cluster, sweep_of(job, args.job, args.sweep),
                  default_python)


def plan_for(loaded: Loaded, run_id: Optional[str]) -> LaunchPlan:
    from launcher.plan.build import build_plan
    from launcher.spec import load_user_deepspeed
    return build_plan(loaded.job, loaded.cluster, loaded.overrides, run_id or new_run_id(loaded.job.name),
                      default_python=loaded.default_python,
                      user_deepspeed=load_user_deepspeed(loaded.resolved_job))


def prepare(loaded: Loaded, plan: LaunchPlan, base_dir: str) -> Prepared:
    """The checks that need no host (raise KitError, nothing started), then the plain data for the rest."""
    from launcher.backends.binding import binding
    from launcher.runs import spec_record
    job, cluster = loaded.resolved_job, loaded.resolved_cluster
    bound = binding(plan.backend, cluster, job)   # first: it checks the key files the checks' logins use
    if plan.backend == "local":   # a remote backend checks on its hosts (backend.check)
        from launcher.preflight import preflight
        preflight(plan, job, cluster, base_dir)
    if plan.backend == "slurm":
        from launcher.preflight.slurm import preflight_slurm
        preflight_slurm(plan, job, cluster)
    return Prepared(plan, cluster.workdir, spec_record(job, plan), spec_record(cluster, plan), bound)


def prepared_for(args) -> Optional[Prepared]:
    """The whole first half of a real (not dry) submission; None when it is a sweep (run another way)."""
    loaded = load(args)
    if loaded.sweep is not None:
        return None
    return prepare(loaded, plan_for(loaded, args.run_id), os.getcwd())

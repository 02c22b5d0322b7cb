"""Can this cluster run jobs? The checks `kit doctor` prints, for either face: the cluster loaded, the job (when one
is named) planned as kit submit would, and the rows the cluster's backend checks: (where, check, verdict, detail)."""

from typing import Optional

from launcher.backends import registry
from launcher.core.request import Request


def doctor_rows(cluster_path: str, request: Optional[Request] = None) -> tuple:
    """(the cluster's name, its rows); `request`: a job (file, script or module) whose entrypoint is looked for."""
    from launcher.spec import Overrides, apply_overrides, load_cluster, load_user_deepspeed

    cluster = load_cluster(cluster_path)
    backend = registry.backend(cluster.backend)
    registry.placement(cluster.backend).check_files(cluster)
    job = plan = None
    if request is not None:
        from launcher.core.prepare import job_of
        from launcher.planning.build import build_plan

        job = job_of(request)  # a job file, a script or a module, as kit submit reads them
        plan = build_plan(job, cluster, Overrides(), "kit-doctor", user_deepspeed=load_user_deepspeed(job))
        job, cluster = apply_overrides(job, cluster, Overrides())
    return cluster.name, backend.doctor_rows(cluster, job, plan)

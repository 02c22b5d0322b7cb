"""What a remote backend takes from the validated specs besides the plan (connection settings, the entrypoint
for its checks), as plain data: it may be made in the forked planner (commands/planner.py), which alone has
the specs, and pickled to kit."""

from typing import Optional


def binding(backend: str, cluster, job) -> Optional[dict]:
    """The `use()` argument of the named backend, or None for one that needs nothing (local). Made only for a run
    that will start: a key or config file the connection settings name and that is not there is a one-line error
    here (spec.check_ssh_files)."""
    if backend in ("ssh", "slurm"):
        from launcher.spec import check_ssh_files
        check_ssh_files(cluster)
    if backend == "ssh":
        from launcher.preflight.entrypoint import EntrypointRef
        from launcher.transport.endpoint import ssh_settings
        return {"settings": ssh_settings(cluster.ssh), "addresses": {h.name: h.address for h in cluster.hosts},
                "entrypoint": EntrypointRef(job.entrypoint.module, job.entrypoint.script)}
    if backend == "slurm":
        from launcher.backends.slurm_where import login_fields
        from launcher.render.slurm import DEFAULT_MAX_REQUEUES
        return {"login": login_fields(cluster), "workdir": cluster.workdir,
                "max_requeues": cluster.slurm.max_requeues if cluster.slurm is not None else DEFAULT_MAX_REQUEUES}
    return None

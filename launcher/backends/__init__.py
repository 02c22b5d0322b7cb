"""Backends deliver a LaunchPlan; they never re-derive any part of it.

Every backend has:
* `check(plan)`: fail (KitError, exit 2) before anything is written or started;
* `execute(plan, record, base_dir) -> (exit code, state, Failure | None)`: deliver and follow the run to its end;
* `current_state(status) -> (state, note)`: what a record's state means now (a dead supervisor is "lost");
* `cancel(record, status) -> str`: stop every process of a running run, return the line to print;
* optionally `detach(plan, record, base_dir) -> int`: start the run and return at once (otherwise `kit submit
  --detach` forks a supervisor that runs `execute`).
* optionally `record_stays_here`: true when the run's record is kept where kit runs, not in the nodes' workdir
  (see record_root).
"""

import os

from launcher.errors import KitError


def record_root(backend, workdir: str, base_dir: str) -> str:
    """Where a run's record is kept: below the nodes' workdir (a local run's, a SLURM cluster's shared one), or
    in `base_dir`, where kit runs, when the backend says the record stays here (SSH hosts may have disks of
    their own; a SLURM cluster reached through a login host)."""
    if getattr(backend, "record_stays_here", False):
        return base_dir
    return os.path.normpath(os.path.join(base_dir, workdir))


def get_backend(name: str):
    if name == "local":
        from launcher.backends.local import LocalBackend
        return LocalBackend()
    if name == "slurm":
        from launcher.backends.slurm import SlurmBackend
        return SlurmBackend()
    if name == "ssh":
        from launcher.backends.ssh import SshBackend
        return SshBackend()
    raise KitError(f"backend {name}: not available yet in this version; use --dry-run to see its plan")

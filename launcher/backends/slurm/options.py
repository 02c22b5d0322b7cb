"""The SLURM backend's own section of a cluster config, `slurm:`, and where a cluster's SLURM commands run (here,
or its login host reached with its `ssh:` section)."""

from typing import Annotated, Optional

from pydantic import Field, StringConstraints

from launcher.spec.base import OneLine
from launcher.spec.cluster import HostName, Section
from launcher.spec.job import PositiveInt


class SlurmOptions(Section):
    partition: Optional[OneLine] = None
    account: Optional[OneLine] = None
    qos: Optional[OneLine] = None
    time: Optional[Annotated[str, StringConstraints(pattern=r"^(\d+-)?\d+(:\d{2}){0,2}$")]] = None
    constraint: Optional[OneLine] = None
    cpus_per_task: Optional[PositiveInt] = None
    mem: Optional[Annotated[str, StringConstraints(pattern=r"^\d+[KMGT]?$")]] = None
    # Seconds before the time limit that SLURM warns the batch shell (B:USR1), which then requeues the job so the
    # ranks checkpoint on SIGTERM and resume; must be well above the checkpoint time plus SLURM's event resolution.
    signal_before: Annotated[int, Field(ge=10, le=65535)] = 180
    # Requeues (warning signal or preemption) before kit lets the job end instead of requeueing it again.
    max_requeues: Annotated[int, Field(ge=0, le=1000)] = 3
    # Verbatim `#SBATCH` options, the escape hatch for anything not modelled: ["--exclusive", "--reservation=x"].
    extra_sbatch: list[Annotated[OneLine, StringConstraints(pattern=r"^--?[A-Za-z]")]] = []
    # Submit from elsewhere: run sbatch/squeue/sacct/scontrol/scancel on this host over SSH (the cluster's `ssh:`
    # section says how to log in) and reach its workdir over SFTP; unset = the SLURM commands run on this machine.
    login_host: Optional[HostName] = None
    # Nodes never to run on (`#SBATCH --exclude`); with exclude_failed_nodes, also those that caused a failure in
    # one of their last two runs (kit hosts lists them; kit hosts --clear NODE forgives one).
    exclude: list[HostName] = []
    exclude_failed_nodes: bool = False


def login_fields(cluster) -> dict:
    """What a run record keeps so that status, logs and cancel reach the same place later (no secrets)."""
    login = cluster.slurm.login_host if cluster.slurm is not None else None
    if login is None:
        return {}
    from launcher.transport.endpoint import ssh_settings

    return {"login_host": login, "login_ssh": ssh_settings(cluster.ssh)}


def where_for(cluster):
    """Where this cluster's SLURM commands run: its login host when the config names one, else here."""
    from launcher.transport.where import where_at

    fields = login_fields(cluster)
    return where_at(fields.get("login_host"), fields.get("login_ssh"))

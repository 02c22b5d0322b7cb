"""How the planner places a SLURM run: the allocation picks the hosts, so each task resolves its rank and the head
node's address itself; the nodes are submitted as one sbatch script (and a sweep as one job array). Also what the
placement owns: the cluster config's `slurm:` section, where the cluster's SLURM commands run, and the run
record's handle (HANDLE)."""

import re
from dataclasses import dataclass
from typing import Annotated, Optional

from pydantic import Field, StringConstraints

from launcher.backends.handle import Handle
from launcher.planning.model import Submission
from launcher.planning.placement import CONFIG, RUN, Edge, Lanes, Layout, Placed, Placement, check_gpus, gpus_of
from launcher.render.shell import runtime_ref
from launcher.render.slurm import MASTER_ADDR_PRELUDE, sbatch_script
from launcher.spec.base import OneLine
from launcher.spec.cluster import ClusterSpec, Host, HostName, Section
from launcher.spec.job import JobSpec, PositiveInt
from launcher.transport.options import SshOptions, check_key_files
from launcher.wellformed import HOST_NAME, ONE_LINE, checked, integer, mapping, text

# The SLURM backend's own section of a cluster config, `slurm:`, and where a cluster's SLURM commands run (here, or
# its login host reached with its `ssh:` section).


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


# What a SLURM run's record keeps of its own (its handle): the job id, where its files are as the SLURM commands see
# them, the login host (if any) and how to reach it, the requeue budget and count, SLURM's last word.

JOB_ID = re.compile(r"^\d+(_\d+)?$")  # a SLURM job id, or <array id>_<task>


@dataclass(frozen=True)
class SlurmHandle(Handle):
    job_id: Optional[str] = checked(None, lambda v: text(v, JOB_ID))
    array_job_id: Optional[str] = checked(None, lambda v: text(v, JOB_ID))
    workdir: Optional[str] = checked(None, text)  # the cluster's workdir, as SLURM sees it
    run_dir: Optional[str] = checked(None, lambda v: text(v, ONE_LINE))  # relative to workdir
    max_requeues: Optional[int] = checked(None, integer)
    login_host: Optional[str] = checked(None, lambda v: text(v, HOST_NAME))
    login_ssh: Optional[dict] = checked(None, mapping)  # connection settings, no secrets
    restarts: int = checked(0, lambda v: integer(v) or 0)  # SLURM's requeue count
    slurm_state: Optional[str] = checked(None, text)

    def scheduler_job_id(self) -> Optional[str]:
        return self.job_id


HANDLE = SlurmHandle


def _logs_in(cluster: ClusterSpec) -> bool:
    return cluster.slurm is not None and cluster.slurm.login_host is not None


class SlurmPlacement(Placement):
    name = "slurm"
    sections = {"slurm": SlurmOptions, "ssh": SshOptions}
    runtime_vars = ("SLURM_NODEID", "KIT_MASTER_ADDR")
    prelude = (MASTER_ADDR_PRELUDE,)
    lanes_own_ports = False  # every array task is an allocation of its own
    restarts_in_place = True  # a restart is a requeue: the same script, resolved again in a new allocation
    task_checks = True  # each task's python has the launch's modules (check_modules.py), before the env check
    env_check_where = "task"  # the tasks meet in the shared run directory (env_check.py) before training

    def validate(self, cluster: ClusterSpec, stage: str = CONFIG, *, plan=None, entrypoint=None, base_dir=".") -> None:
        if stage == CONFIG:
            if cluster.hosts:
                raise ValueError("a slurm cluster takes its hosts from the allocation: remove hosts")
            login_host = cluster.slurm.login_host if cluster.slurm is not None else None
            if cluster.ssh is not None and login_host is None:
                raise ValueError("ssh: section given but slurm.login_host is not set (ssh: says how to reach it)")
            if cluster.gpu_ids is not None:
                raise ValueError(f"gpu_ids: only a local cluster picks GPU ids, not a {self.name} cluster; remove it")
        elif stage == RUN and _logs_in(cluster):
            check_key_files(cluster.ssh)

    def at_edge(
        self, cluster: ClusterSpec, plan=None, job: Optional[JobSpec] = None, *, cwd: str = ".", embedded: bool = False
    ) -> Edge:
        """Without a login host the SLURM commands run here, on the filesystem the nodes share: the nodes' code is
        seen here in their workdir."""
        if plan is None:
            return Edge(cluster)
        if _logs_in(cluster):
            return Edge(cluster, plan, None)
        import os

        return Edge(cluster, plan, os.path.normpath(os.path.join(cwd, cluster.workdir)))

    def health_scope(self, cluster: ClusterSpec):
        return () if cluster.slurm is not None and cluster.slurm.exclude_failed_nodes else None

    def place(self, job: JobSpec, cluster: ClusterSpec, failed: dict) -> Placed:
        """Placeholder hosts: the allocation decides. With slurm.exclude_failed_nodes, the nodes that failed lately
        join slurm.exclude (`--exclude`)."""
        notes: tuple[str, ...] = ()
        s = cluster.slurm
        if failed and s is not None and s.exclude_failed_nodes:
            from launcher.planning.health import excluded_note

            names = sorted(n for n in failed if n not in s.exclude)
            slurm = s.model_copy(update={"exclude": sorted({*s.exclude, *names})})
            note = excluded_note(names, failed)
            cluster, notes = cluster.model_copy(update={"slurm": slurm}), (note,) if note else ()
        hosts = tuple(Host(name=f"slurm-node-{i}") for i in range(job.nodes))
        check_gpus(gpus_of(job, cluster), hosts, cluster, lambda host: f"cluster '{cluster.name}'")
        return Placed(cluster, hosts, notes)

    def layout(self, cluster: ClusterSpec, hosts: tuple[Host, ...], run_dir: str, gpus_per_node: int) -> Layout:
        """Each task resolves the head's address and its rank; one config file for every task (its rank comes from
        $SLURM_NODEID on the command line)."""
        return Layout(
            master=runtime_ref("KIT_MASTER_ADDR"),
            ranks=(runtime_ref("SLURM_NODEID"),) * len(hosts),
            config_files=(f"{run_dir}/accelerate.yaml",) * len(hosts),
            gpu_ids=(None,) * len(hosts),
        )

    def submission(self, cluster, *, run_id, job_name, nodes, gpus, run_dir, node_command):
        script_path = f"{run_dir}/job.sbatch"
        script = sbatch_script(
            cluster,
            run_id=run_id,
            job_name=job_name,
            nodes=nodes,
            gpus=gpus,
            run_dir=run_dir,
            workdir=cluster.workdir,
            node_command=node_command,
        )
        return {script_path: script}, Submission(kind="sbatch", argv=("sbatch", "--parsable", script_path))

    def binding(self, cluster: ClusterSpec, job: JobSpec) -> dict:
        from launcher.preflight.entrypoint import EntrypointRef
        from launcher.render.slurm import DEFAULT_MAX_REQUEUES

        slurm = cluster.slurm
        return {
            "login": login_fields(cluster),
            "workdir": cluster.workdir,
            "max_requeues": slurm.max_requeues if slurm is not None else DEFAULT_MAX_REQUEUES,
            "partition": slurm.partition if slurm is not None else None,
            "entrypoint": EntrypointRef(job.entrypoint.module, job.entrypoint.script),
        }

    def lanes(self, cluster: ClusterSpec, jobs: list[JobSpec], parallel: int) -> Lanes:
        # The job array's `%parallel` runs trials side by side; every lane keeps the cluster as it is.
        count = min(parallel, len(jobs))
        return Lanes((cluster,) * count, ("",) * count)

    def array_plan(self, sweep_id: str, parallel: int, trials):
        from launcher.backends.slurm.arrays import array_plan

        return array_plan(sweep_id, parallel, trials)


PLACEMENT = SlurmPlacement()

"""The cluster config: where a job runs and how to reach it (cluster_configs/*.yaml)."""

from typing import Annotated, Literal, Optional, Union, get_args

from pydantic import Field, StringConstraints, field_validator, model_validator

from launcher.backends import registry
from launcher.spec.base import NAME_PATTERN, OneLine, StrictModel, no_reserved_env
from launcher.spec.job import EnvName, PositiveInt

Port = Annotated[int, Field(ge=1024, le=65535)]
HostName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")]
# An index, a UUID (GPU-...) or a MIG id, as CUDA_VISIBLE_DEVICES accepts them.
GpuId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_./:-]*$")]


class Host(StrictModel):
    name: HostName
    # Address other nodes use to reach this host (rendezvous); defaults to name.
    address: Optional[HostName] = None
    gpus: Optional[Annotated[int, Field(ge=0)]] = None


class PortPolicy(StrictModel):
    """The rendezvous port is derived from the run id inside [base, base + span)."""

    base: Port = 29500
    span: Annotated[int, Field(ge=1, le=20000)] = 1000

    @model_validator(mode="after")
    def fits(self):
        if self.base + self.span - 1 > 65535:
            raise ValueError("base + span - 1 must be at most 65535")
        return self


class Section(StrictModel):
    """A backend's own section of the cluster config (`slurm:`, `ssh:`): a backend's placement lists the sections
    it reads; any other one given is an error."""


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


class SshOptions(Section):
    user: Optional[OneLine] = None
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    identity_file: Optional[str] = None
    known_hosts: Optional[str] = None
    # Seconds, finite (a socket takes no .inf or .nan); bounded: every wait kit makes on a host derives from it.
    connect_timeout: Annotated[float, Field(gt=0, le=600, allow_inf_nan=False)] = 10.0
    # A host that answers nothing (not even SSH's keepalive requests) for this long is lost: kit tears the run
    # down on the other hosts; the lost host's watchdog stops the node by itself after twice as long without kit.
    host_timeout: Annotated[float, Field(ge=2, le=3600, allow_inf_nan=False)] = 30.0
    # An OpenSSH client config read for HostName, User, Port, IdentityFile, ProxyJump (default ~/.ssh/config).
    config_file: Optional[str] = None
    # Explicit opt-in: connect to hosts whose key is not in known_hosts; the keys accepted go into the run record.
    accept_new_host_keys: bool = False


class SyncOptions(Section):
    """Code sync for hosts with disks of their own: what changed under `source` is copied into each host's workdir
    over SFTP before the run starts."""
    # A local directory (default: the directory kit runs in).
    source: Optional[OneLine] = None
    # Globs relative to source (`**` spans directories). Default: the git-tracked files where source is a git
    # checkout, every file otherwise.
    include: list[OneLine] = []
    exclude: list[OneLine] = []


class ClusterSpec(StrictModel):
    name: Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
    backend: str   # a name in backends/registry.py
    hosts: list[Union[HostName, Host]] = []
    gpus_per_node: Annotated[int, Field(ge=0)] = 0
    # Processes per node when the node has no GPUs.
    procs_per_node: PositiveInt = 1
    # `--num_cpu_threads_per_process` on CPU nodes: a number, or `auto` (the default) = the node's cores / the
    # processes sharing them: from `cpus` when given, else counted on each node at its start.
    cpu_threads_per_process: Optional[Union[PositiveInt, Literal["auto"]]] = None
    # Usable cores per node; a local cluster gets this machine's (read at submit time, not in the plan).
    cpus: Optional[PositiveInt] = None
    # Local clusters: the GPU ids the nodes' `--gpu_ids` slices come from (default 0..gpus_per_node-1). kit fills it
    # from CUDA_VISIBLE_DEVICES at submit time, so a restriction set by the user or a scheduler is honoured.
    gpu_ids: Optional[list[GpuId]] = None
    workdir: OneLine = "."
    # Interpreter on the nodes; unset on a local cluster means kit's own interpreter.
    python: Optional[OneLine] = None
    # Shell lines run on every node before the launch: `module load cuda`, `source venv/bin/activate`.
    setup: list[str] = []
    env: dict[EnvName, str] = {}
    _env_not_reserved = field_validator("env", mode="after")(no_reserved_env)
    master_port: Union[Port, PortPolicy] = PortPolicy()
    # The network interface gloo and NCCL use on each node: `auto` (the one the route to the master takes, chosen
    # on the node at start), an interface name, or `none` (the libraries' own default). A GLOO_SOCKET_IFNAME or
    # NCCL_SOCKET_IFNAME in env wins over it.
    interface: Annotated[str, StringConstraints(pattern=r"^(auto|none|[A-Za-z0-9_.:@-]{1,15})$")] = "auto"
    # Where run records and generated files go, relative to workdir.
    run_root: OneLine = "runs"
    # Seconds ranks get to save after SIGTERM before SIGKILL. torchrun's agent itself waits 30 s for its workers
    # before killing them, so a shorter value would cut the preemption checkpoint that torchrun allows.
    teardown_grace: Annotated[float, Field(ge=30, le=3600)] = 40.0
    slurm: Optional[SlurmOptions] = None
    ssh: Optional[SshOptions] = None
    sync: Optional[SyncOptions] = None

    @field_validator("hosts", mode="after")
    @classmethod
    def hosts_as_objects(cls, hosts):
        objs = [Host(name=h) if isinstance(h, str) else h for h in hosts]
        names = [h.name for h in objs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate host {dupes[0]}")
        return objs

    @field_validator("backend", mode="after")
    @classmethod
    def known_backend(cls, name: str) -> str:
        if not registry.known(name):
            raise ValueError(f"{name!r} is not a backend kit has; use one of: {', '.join(registry.names())}")
        return name

    @model_validator(mode="after")
    def backend_sections(self):
        """What the backend accepts (hosts, GPU ids, its sections): its placement says."""
        placement = registry.placement(self.backend)
        for name in section_fields():
            if getattr(self, name) is not None and name not in placement.sections:
                raise ValueError(f"{name}: section given but backend is {self.backend}")
        placement.check_cluster(self)
        return self


def section_fields() -> tuple[str, ...]:
    """The ClusterSpec fields that hold a backend's section."""
    return tuple(name for name, f in ClusterSpec.model_fields.items()
                 if any(isinstance(a, type) and issubclass(a, Section) for a in get_args(f.annotation)))

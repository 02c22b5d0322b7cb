"""The cluster config: where a job runs and how to reach it (cluster_configs/*.yaml)."""

from typing import Annotated, Literal, Optional, Union

from pydantic import Field, StringConstraints, field_validator, model_validator

from launcher.spec.base import NAME_PATTERN, StrictModel, no_reserved_env
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


class SlurmOptions(StrictModel):
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    time: Optional[Annotated[str, StringConstraints(pattern=r"^(\d+-)?\d+(:\d{2}){0,2}$")]] = None
    constraint: Optional[str] = None
    cpus_per_task: Optional[PositiveInt] = None
    mem: Optional[Annotated[str, StringConstraints(pattern=r"^\d+[KMGT]?$")]] = None
    # Seconds before the time limit that SLURM warns the batch shell (B:USR1), which then requeues the job so the
    # ranks checkpoint on SIGTERM and resume; must be well above the checkpoint time plus SLURM's event resolution.
    signal_before: Annotated[int, Field(ge=10, le=65535)] = 180
    # Requeues (warning signal or preemption) before kit lets the job end instead of requeueing it again.
    max_requeues: Annotated[int, Field(ge=0, le=1000)] = 3
    # Verbatim `#SBATCH` options, the escape hatch for anything not modelled: ["--exclusive", "--reservation=x"].
    extra_sbatch: list[Annotated[str, StringConstraints(pattern=r"^--?[A-Za-z]")]] = []
    # Submit from elsewhere: run sbatch/squeue/sacct/scontrol/scancel on this host over SSH (the cluster's `ssh:`
    # section says how to log in) and reach its workdir over SFTP; unset = the SLURM commands run on this machine.
    login_host: Optional[HostName] = None


class SshOptions(StrictModel):
    user: Optional[str] = None
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    identity_file: Optional[str] = None
    known_hosts: Optional[str] = None
    connect_timeout: Annotated[float, Field(gt=0)] = 10.0
    # An OpenSSH client config read for HostName, User, Port, IdentityFile, ProxyJump (default ~/.ssh/config).
    config_file: Optional[str] = None
    # Explicit opt-in: connect to hosts whose key is not in known_hosts; the keys accepted go into the run record.
    accept_new_host_keys: bool = False


class ClusterSpec(StrictModel):
    name: Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
    backend: Literal["local", "ssh", "slurm"]
    hosts: list[Union[HostName, Host]] = []
    gpus_per_node: Annotated[int, Field(ge=0)] = 0
    # Processes per node when the node has no GPUs.
    procs_per_node: PositiveInt = 1
    # `--num_cpu_threads_per_process` on CPU nodes: a number, or `auto` = cpus / processes sharing the machine.
    cpu_threads_per_process: Optional[Union[PositiveInt, Literal["auto"]]] = None
    # Usable cores per node; a local cluster gets this machine's (read at submit time, not in the plan).
    cpus: Optional[PositiveInt] = None
    # Local clusters: the GPU ids the nodes' `--gpu_ids` slices come from (default 0..gpus_per_node-1). kit fills it
    # from CUDA_VISIBLE_DEVICES at submit time, so a restriction set by the user or a scheduler is honoured.
    gpu_ids: Optional[list[GpuId]] = None
    workdir: str = "."
    # Interpreter on the nodes; unset on a local cluster means kit's own interpreter.
    python: Optional[str] = None
    # Shell lines run on every node before the launch: `module load cuda`, `source venv/bin/activate`.
    setup: list[str] = []
    env: dict[EnvName, str] = {}
    _env_not_reserved = field_validator("env", mode="after")(no_reserved_env)
    master_port: Union[Port, PortPolicy] = PortPolicy()
    # Where run records and generated files go, relative to workdir.
    run_root: str = "runs"
    # Seconds ranks get to save after SIGTERM before SIGKILL. torchrun's agent itself waits 30 s for its workers
    # before killing them, so a shorter value would cut the preemption checkpoint that torchrun allows.
    teardown_grace: Annotated[float, Field(ge=30, le=3600)] = 40.0
    slurm: Optional[SlurmOptions] = None
    ssh: Optional[SshOptions] = None

    @field_validator("hosts", mode="after")
    @classmethod
    def hosts_as_objects(cls, hosts):
        objs = [Host(name=h) if isinstance(h, str) else h for h in hosts]
        names = [h.name for h in objs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate host {dupes[0]}")
        return objs

    @model_validator(mode="after")
    def backend_sections(self):
        if self.backend == "ssh" and not self.hosts:
            raise ValueError("an ssh cluster needs hosts: [...]")
        if self.backend == "local" and self.hosts:
            raise ValueError("a local cluster runs every node on this machine: remove hosts")
        if self.backend == "slurm" and self.hosts:
            raise ValueError("a slurm cluster takes its hosts from the allocation: remove hosts")
        if self.slurm is not None and self.backend != "slurm":
            raise ValueError(f"slurm: section given but backend is {self.backend}")
        login_host = self.slurm.login_host if self.slurm is not None else None
        if self.ssh is not None and self.backend == "slurm" and login_host is None:
            raise ValueError("ssh: section given but slurm.login_host is not set (ssh: says how to reach it)")
        if self.ssh is not None and self.backend not in ("ssh", "slurm"):
            raise ValueError(f"ssh: section given but backend is {self.backend}")
        return self

    @model_validator(mode="after")
    def gpu_ids_only_local(self):
        if self.gpu_ids is not None and self.backend != "local":
            raise ValueError(f"gpu_ids: only a local cluster picks GPU ids, not a {self.backend} cluster; remove it")
        if self.gpu_ids is not None and len(set(self.gpu_ids)) != len(self.gpu_ids):
            raise ValueError("gpu_ids: each GPU id may appear only once")
        return self

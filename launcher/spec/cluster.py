"""The cluster config: where a job runs and how to reach it (cluster_configs/*.yaml)."""

from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, Union

from pydantic import Field, StringConstraints, create_model, field_validator, model_validator

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
    """A backend's own section of the cluster config (`slurm:`, `ssh:`), a model the backend declares: its
    placement's `sections` name them (name -> Section subclass); a section of another backend is an error."""


class ClusterSpec(StrictModel):
    name: Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
    backend: str  # a name in backends/registry.py
    if TYPE_CHECKING:
        hosts: list[Host] = []  # what validation leaves: hosts_as_objects makes each name a Host
    else:
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
    # The backend's own sections (`slurm:`, `ssh:`, ...) are fields of the backend's model of this class
    # (model_for): ClusterSpec(backend="slurm", slurm={...}) is a SLURM cluster's config with its section.

    def __new__(cls, *args, **data):
        return super().__new__(cls.model_for(data) if cls is ClusterSpec else cls)

    def __reduce__(self):
        # The backend's model is made at run time: pickled by the backend's name, rebuilt the same way.
        return _restore, (self.backend, self.__getstate__())

    @classmethod
    def model_for(cls, data) -> "type[ClusterSpec]":
        """The model that validates `data`: this one with the sections its backend declares as fields."""
        backend = data.get("backend") if isinstance(data, dict) else None
        if cls is not ClusterSpec or not isinstance(backend, str) or not registry.known(backend):
            return cls
        if backend not in _MODELS:
            sections: dict[str, Any] = {
                name: (Optional[model], None) for name, model in registry.placement(backend).sections.items()
            }
            _MODELS[backend] = create_model(
                f"ClusterSpec[{backend}]", __base__=ClusterSpec, __module__=__name__, **sections
            )
        return _MODELS[backend]

    @classmethod
    def model_validate(cls, obj, **kwargs):
        model = cls.model_for(obj)
        return super().model_validate(obj, **kwargs) if model is cls else model.model_validate(obj, **kwargs)

    if TYPE_CHECKING:  # a backend's sections are fields of its model only: to a type checker, any attribute

        def __getattr__(self, name: str) -> Any: ...

    @model_validator(mode="before")
    @classmethod
    def others_sections(cls, data):
        """A key that is another backend's section is said so, not as an unknown key."""
        if isinstance(data, dict) and registry.known(data.get("backend")):
            for key in data:
                if key not in cls.model_fields and _declared_elsewhere(key):
                    raise ValueError(f"{key}: section given but backend is {data['backend']}")
        return data

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
    def backend_accepts(self):
        """What the backend accepts (hosts, GPU ids, how its sections go together): its placement says."""
        registry.placement(self.backend).validate(self)
        return self


_MODELS: dict[str, type[ClusterSpec]] = {}  # backend name -> its ClusterSpec model


def _restore(backend: str, state: dict) -> ClusterSpec:
    model = ClusterSpec.model_for({"backend": backend})
    spec = model.__new__(model)
    spec.__setstate__(state)
    return spec


def _declared_elsewhere(key: str) -> bool:
    """Whether some installed backend declares a section `key` (asked only for a key that is no field: an error)."""
    return any(key in registry.placement(name).sections for name in registry.names())

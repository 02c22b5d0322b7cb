"""The launch plan: plain, frozen data that dry-run prints and backends deliver byte for byte."""

from dataclasses import asdict, dataclass, field
from typing import Optional


@dataclass(frozen=True)
class InheritPolicy:
    """What a node takes from the environment it is started in (the submitter's, on the local backend):
    everything except these launcher and rendezvous variables, which would silently change the world."""

    drop_prefixes: tuple[str, ...] = ()
    drop_names: tuple[str, ...] = ()

    def drops(self, name: str) -> bool:
        return name in self.drop_names or name.startswith(self.drop_prefixes)


@dataclass(frozen=True)
class World:
    num_machines: int
    procs_per_node: int
    world_size: int
    device: str  # "cuda" or "cpu"
    strategy: str  # ddp | deepspeed | fsdp
    mixed_precision: str  # no | fp16 | bf16
    master_addr: str  # a literal address, or a ${VAR} resolved inside the job (SLURM)
    master_port: int
    pipeline_stages: int = 1  # the model's stages across the world (rank r: stage r % N, replica r // N)
    pipeline_microbatches: int = 0


@dataclass(frozen=True)
class NodePlan:
    machine_rank: int
    host: str
    workdir: str
    argv: tuple[str, ...]  # the launch command, one word per element
    env: dict[str, str]  # what the node adds to its own environment
    secret_env: tuple[str, ...]  # names passed through from the submitter; values never in the plan
    setup: tuple[str, ...]  # shell lines run before the launch
    files: tuple[str, ...]  # names in LaunchPlan.files this node needs
    command: str  # the exact shell text the node runs (bash -c)
    log: str  # per-node log path, relative to workdir


@dataclass(frozen=True)
class Submission:
    """How the nodes are started: `processes` (one per node, by kit) or a batch script (`sbatch`)."""

    kind: str
    argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class Limits:
    """How long kit waits for what, and how often it starts the world again (the job's timeouts and restarts)."""

    rendezvous_timeout: float = 300.0
    hang_timeout: Optional[float] = None
    restarts: int = 0


@dataclass(frozen=True)
class SyncPlan:
    """The user's code copied into each node's workdir before the start (a cluster's `sync:`): the files listed
    at submit time (what changed among them is copied, by size and hash)."""

    source: str  # absolute local directory
    files: tuple[str, ...]  # relative to source, in order
    chosen_by: str  # how the list was made, for the dry-run ("git-tracked files", ...)


@dataclass(frozen=True)
class LaunchPlan:
    run_id: str
    job_name: str
    backend: str
    cluster_name: str
    run_dir: str  # relative to each node's workdir
    world: World
    nodes: tuple[NodePlan, ...]
    files: dict[str, str]  # path (relative to workdir) -> content
    submission: Submission
    # Shell variables that are expanded inside each task, never at submit time.
    runtime_vars: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    # Records written before the policy existed read back as "drop nothing", which is what those runs did.
    inherit: InheritPolicy = InheritPolicy()
    # Teardown: SIGTERM to every process of a node, SIGKILL to what is left after this many seconds.
    teardown_grace: float = 40.0
    limits: Limits = Limits()
    # Hosts the cluster has beyond the plan's nodes, (name, address): a restart moves a lost host's node there.
    spare_hosts: tuple[tuple[str, str], ...] = ()
    sync: Optional[SyncPlan] = None
    attempt: int = 1  # which attempt of the run this plan starts (planning/attempt.py)
    env_check: str = "strict"  # the job's env_check: nodes whose environments differ stop the run (strict)

    def to_dict(self) -> dict:
        return asdict(self)

    def node(self, rank: int) -> NodePlan:
        return self.nodes[rank]


def from_dict(data: dict) -> LaunchPlan:
    """Rebuild a plan from `to_dict` output (run records store plans as JSON)."""
    d = dict(data)
    d["world"] = World(**d["world"])
    d["nodes"] = tuple(
        NodePlan(
            **{
                **n,
                "argv": tuple(n["argv"]),
                "secret_env": tuple(n["secret_env"]),
                "setup": tuple(n["setup"]),
                "files": tuple(n["files"]),
            }
        )
        for n in d["nodes"]
    )
    s = d["submission"]
    d["submission"] = Submission(kind=s["kind"], argv=tuple(s["argv"]))
    d["runtime_vars"] = tuple(d.get("runtime_vars", ()))
    d["notes"] = tuple(d.get("notes", ()))
    inherit = d.get("inherit") or {}
    d["inherit"] = InheritPolicy(**{k: tuple(v) for k, v in inherit.items()})
    d["limits"] = Limits(**(d.get("limits") or {}))
    d["spare_hosts"] = tuple(tuple(h) for h in d.get("spare_hosts", ()))
    if d.get("sync"):
        d["sync"] = SyncPlan(**{**d["sync"], "files": tuple(d["sync"]["files"])})
    return LaunchPlan(**d)

"""What the planner asks a backend: where the nodes go and what each node's launch looks like there. Every backend
has one `Placement` (backends/<name>/placement.py), found through backends/registry.py; build_plan and the sweep
planner call only its ten methods, so no planning code names a backend. Pure: no I/O, no environment reads
(`at_edge` is the one exception, called at the edge by the spec loader and the planner's caller). Also the
rendezvous port, derived here for every backend: from the run id, and per sweep lane."""

import zlib
from dataclasses import dataclass
from typing import Callable, Optional

from launcher.errors import KitError, Option
from launcher.planning.model import LaunchPlan, Submission
from launcher.spec.cluster import ClusterSpec, Host, PortPolicy
from launcher.spec.job import JobSpec

# The rendezvous port, derived in one place: from the run id, so two runs on one host do not both take 29500, and
# per sweep lane, so trials of one sweep running side by side never draw the same port.


def _spread(policy: PortPolicy, key: str, offset: int = 0) -> int:
    return policy.base + (zlib.crc32(key.encode()) + offset) % policy.span


def master_port(policy, run_id: str) -> int:
    """A fixed port, or base + crc32(run id) % span."""
    if isinstance(policy, int):
        return policy
    assert isinstance(policy, PortPolicy)
    return _spread(policy, run_id)


def lane_port(policy, sweep_id: str, lane: int, lanes: int) -> Optional[int]:
    """Lane `lane`'s fixed port: a fixed port + lane, or base + (crc32(sweep id) + lane) % span (per-run-id ports
    would clash once in `span` pairs); None (the run id decides) when the span is narrower than the lanes."""
    if isinstance(policy, int):
        return policy + lane
    if policy.span < lanes:
        return None
    return _spread(policy, sweep_id, lane)


@dataclass(frozen=True)
class Lanes:
    """Where a sweep's trials run at once: lane k's cluster, and its GPUs or hosts for the dry-run."""

    clusters: tuple[ClusterSpec, ...]
    placement: tuple[str, ...]  # "" when every lane shares the cluster as it is

    @property
    def count(self) -> int:
        return len(self.clusters)


def gpus_of(job: JobSpec, cluster: ClusterSpec) -> int:
    return job.gpus_per_node if job.gpus_per_node is not None else cluster.gpus_per_node


@dataclass(frozen=True)
class Edge:
    """What only this machine can tell, added at the edge (never by the planner): the cluster with its facts
    filled in; for a plan, the plan with its additions and where the nodes' code is seen from here."""

    cluster: ClusterSpec
    plan: Optional[LaunchPlan] = None
    # The directory on this machine whose files the nodes see in their workdir, for the checks of the job's code
    # made before anything starts (preflight/here.py); None when kit cannot read the nodes' code from here.
    code_dir: Optional[str] = None


@dataclass(frozen=True)
class Placed:
    """Where a run's nodes go: the cluster as the run uses it (placed away from hosts that failed lately), one
    host per node, and what was done about the failed hosts (the plan's notes)."""

    cluster: ClusterSpec
    hosts: tuple[Host, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Layout:
    """Each node's launch as its argv says it, node by node: the head's address, the machine rank (a number, or a
    variable each task resolves), the accelerate config file, the `--gpu_ids` (when the backend picks GPUs)."""

    master: str
    ranks: tuple[str, ...]
    config_files: tuple[str, ...]
    gpu_ids: tuple[Optional[str], ...]


# Stages of Placement.validate: the cluster config as loaded (ValueError, the schema's message), this machine's
# files a real run needs (KitError), a dry-run's checks of what the backend's own checks would find here.
CONFIG, RUN, DRY = "config", "run", "dry"


def hosts_listed(job: JobSpec, cluster: ClusterSpec) -> tuple[Host, ...]:
    """Node i on the cluster's host i; one line when the cluster lists too few."""
    if job.nodes > len(cluster.hosts):
        raise KitError(
            f"nodes: {job.nodes} nodes requested but cluster '{cluster.name}' lists {len(cluster.hosts)} hosts; lower ",
            Option("nodes"),
            " or add hosts",
        )
    return tuple(cluster.hosts[: job.nodes])


def check_gpus(gpus: int, hosts: tuple[Host, ...], cluster: ClusterSpec, where: Callable[[Host], str]) -> None:
    """Each host has the GPUs a node asks for (`where(host)`: how the error names where the node goes)."""
    for host in hosts:
        have = host.gpus if host.gpus is not None else cluster.gpus_per_node
        if gpus > have:
            raise KitError(
                f"gpus_per_node: {gpus} GPUs per node requested but {where(host)} has {have}; lower ",
                Option("gpus"),
                " or fix the cluster's gpus_per_node",
            )


# Methods of the earlier, wider contract (22 methods). kit no longer calls them: a plug-in that still defines one
# would have its override ignored in silence: each subclass notes those it defines, and the registry refuses it,
# naming them (backends/registry.py).
RETIRED = (
    "check_cluster",
    "at_submit",
    "code_here",
    "dry_checks",
    "check_files",
    "default_python",
    "hosts",
    "away_from",
    "check_gpus",
    "cores_shared_by",
    "master",
    "rank_word",
    "config_file",
    "gpu_ids",
    "dryrun_head",
    "dryrun_node",
)


class Placement:
    """Defaults fit a backend whose nodes are hosts the cluster config lists (SSH-like); others override. The
    planner and the edge ask it the ten questions below; what is constant per backend is data (attributes)."""

    retired_overrides: tuple[str, ...] = ()  # methods of the earlier contract this class defines (RETIRED)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        mine = {name for klass in cls.__mro__ if klass is not Placement for name in RETIRED if name in vars(klass)}
        cls.retired_overrides = tuple(sorted(mine))

    name = "?"
    # The cluster config's sections this backend owns: name -> its Section model (spec/cluster.py); they are
    # fields of the backend's ClusterSpec model, and another backend's section given is an error.
    sections: dict = {}
    # Shell variables the node commands leave for each task to expand (e.g. $SLURM_NODEID).
    runtime_vars: tuple[str, ...] = ()
    # Lines before the node's setup that set runtime variables (e.g. the master address from the allocation).
    prelude: tuple[str, ...] = ()
    # The run's generated files travel to each host (uploads), rather than sitting on a shared workdir.
    uploads_files = False
    # Trials of a sweep that share a host get their own master port per lane.
    lanes_own_ports = True
    # The nodes start from kit's own environment (filtered by the plan's inherit policy): kit then says what it
    # left out.
    inherits_submit_env = False
    # The nodes' interpreter when the cluster sets no `python:`: kit's own (the nodes are processes of this
    # machine, so the venv kit lives in is theirs), else `python` on the nodes' PATH.
    nodes_run_kits_python = False
    # All nodes share one machine's cores (simulated nodes): cpu_threads_per_process: auto divides the cores by
    # every node's processes, not one node's.
    nodes_share_cores = False

    # Where the nodes' environments are compared before training (render/envcheck.py): "task" (each task, before
    # its launcher, meeting the others in the shared run directory), "checks" (the backend's checks before
    # anything starts), "" (nowhere: the nodes share one machine).
    env_check_where = ""
    # Each task checks its interpreter has the launch's modules right before its launcher (render/modules.py):
    # a backend whose nodes kit does not check itself before they start (its checks run no Python on the nodes).
    task_checks = False

    # A restart is the scheduler's requeue of the same job (SLURM): attempt k runs attempt 1's plan.
    restarts_in_place = False

    # ---- the cluster config, and what this machine can tell
    def validate(self, cluster: ClusterSpec, stage: str = CONFIG, *, plan=None, entrypoint=None, base_dir=".") -> None:
        """The checks made here, by stage. CONFIG: a config this backend cannot use raises ValueError (the
        schema's message). RUN: before a real run (not a dry-run), the files of this machine its sections name
        (an SSH key) are there: a KitError naming the field otherwise. DRY: for a dry-run of `plan`, what this
        backend's own checks (Backend.check) can tell without reaching beyond this machine (a local node's
        interpreter finding `entrypoint`'s module); nothing by default."""
        if stage == CONFIG:
            if not cluster.hosts:
                raise ValueError(f"backend {self.name} needs hosts: [...]")
            if cluster.gpu_ids is not None:
                raise ValueError(f"gpu_ids: only a local cluster picks GPU ids, not a {self.name} cluster; remove it")

    def at_edge(
        self, cluster: ClusterSpec, plan=None, job: Optional[JobSpec] = None, *, cwd: str = ".", embedded: bool = False
    ) -> Edge:
        """What only this machine can tell, at submit time, by the callers of the planner, never by it. Without a
        plan: the cluster with the facts read here filled in (a local cluster: its cores and visible GPUs;
        `embedded`: the cluster kit uses without --cluster), as the spec loader asks. With one: the plan with
        what this machine adds (an SSH cluster's `sync:` file list; the dry-run shows the result) and where the
        nodes' code is seen from `cwd` (by default the sync source the plan copies to the hosts)."""
        if plan is None:
            return Edge(cluster)
        return Edge(cluster, plan, plan.sync.source if plan.sync is not None else None)

    def binding(self, cluster: ClusterSpec, job: JobSpec):
        """What the backend takes from the validated specs besides the plan (connection settings, the entrypoint
        for its checks), as plain data that pickles without the schemas (it may be made in the forked planner):
        the argument of its Backend.use(). None when it needs nothing."""
        return None

    def health_scope(self, cluster: ClusterSpec) -> Optional[tuple]:
        """Which hosts' health the planner wants (read from the records at the edge): the cluster's listed hosts;
        () for every host this backend's runs used (a scheduler's nodes); None for none."""
        return tuple(h.name for h in cluster.hosts) or None

    # ---- the plan
    def place(self, job: JobSpec, cluster: ClusterSpec, failed: dict) -> Placed:
        """Where the nodes go, given the hosts that caused a failure lately (host -> why; the planner's input,
        planning/health.py): listed hosts are reordered so that healthy spares take the nodes of failed ones,
        node i goes on host i, and each host must have the GPUs a node asks for."""
        notes: tuple[str, ...] = ()
        if failed and cluster.hosts:
            from launcher.planning.health import away_from_failed

            hosts, notes = away_from_failed(tuple(cluster.hosts), job.nodes, failed)
            cluster = cluster.model_copy(update={"hosts": list(hosts)})
        placed = hosts_listed(job, cluster)
        check_gpus(gpus_of(job, cluster), placed, cluster, lambda host: f"host {host.name}")
        return Placed(cluster, placed, notes)

    def layout(self, cluster: ClusterSpec, hosts: tuple[Host, ...], run_dir: str, gpus_per_node: int) -> Layout:
        """Each node's launch words (`hosts`: the run's, one per node, after any lost host was replaced): the
        head's address, the machine rank as a number, one accelerate config file per node, no `--gpu_ids`."""
        head = hosts[0]
        ranks = range(len(hosts))
        return Layout(
            master=head.address or head.name,
            ranks=tuple(str(rank) for rank in ranks),
            config_files=tuple(f"{run_dir}/accelerate.node{rank}.yaml" for rank in ranks),
            gpu_ids=(None,) * len(hosts),
        )

    def submission(
        self,
        cluster: ClusterSpec,
        *,
        run_id: str,
        job_name: str,
        nodes: int,
        gpus: int,
        run_dir: str,
        node_command: str,
    ) -> tuple[dict, Submission]:
        """(files added to the plan, how the nodes are submitted): by default kit starts one process per node."""
        return {}, Submission(kind="processes")

    # ---- the dry-run
    def dryrun(self, plan, node=None) -> list[str]:
        """The dry-run's lines of this backend: about delivery, for the plan's head (after the world and the
        submission) when `node` is None; else for that node's section (before its command)."""
        return []

    # ---- sweeps
    def lanes(self, cluster: ClusterSpec, jobs: list[JobSpec], parallel: int) -> Lanes:
        """Lane k's cluster: disjoint host sets where the hosts allow (GPU trials never share hosts)."""
        m = max(job.nodes for job in jobs)
        sets = len(cluster.hosts) // m
        gpu = any(gpus_of(job, cluster) for job in jobs)
        count = min(parallel, len(jobs), sets if gpu else parallel)
        if sets <= 1 or count <= 1:
            return Lanes((cluster,) * max(1, count), ("",) * max(1, count))
        clusters, placement = [], []
        for k in range(count):
            start = (k % sets) * m
            hosts = cluster.hosts[start:] + cluster.hosts[:start]
            clusters.append(cluster.model_copy(update={"hosts": hosts}))
            placement.append("hosts " + ",".join(h.name for h in hosts[:m]))
        return Lanes(tuple(clusters), tuple(placement))

    def array_plan(self, sweep_id: str, parallel: int, trials) -> Optional[object]:
        """One submission for every trial of a sweep (a SLURM job array), or None: trials run lane by lane."""
        return None


def spares(job: JobSpec, cluster: ClusterSpec) -> tuple[Host, ...]:
    """Hosts the cluster lists beyond the job's nodes, for a restart to move a lost host's node to (none where the
    cluster lists no hosts: a local cluster, an allocation)."""
    return tuple(cluster.hosts[job.nodes :])


def with_lane_ports(placement: Placement, lanes: Lanes, key: str) -> Lanes:
    """Each lane's own master port, when lanes may share a host (lane_port above: one derivation)."""
    if lanes.count == 1 or not placement.lanes_own_ports:
        return lanes
    clusters = []
    for k, c in enumerate(lanes.clusters):
        port = lane_port(c.master_port, key, k, lanes.count)
        clusters.append(c if port is None else c.model_copy(update={"master_port": port}))
    return Lanes(tuple(clusters), lanes.placement)

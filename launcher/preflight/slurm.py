"""Before `sbatch`: can this job ever run on that partition? One line and exit 2 on the first problem, nothing
queued. A job asking for more nodes or GPUs than the partition has would otherwise wait in the queue forever."""

import os
import re
import shutil
import subprocess

from launcher.errors import KitError

TOOLS = ("sbatch", "srun", "scontrol")
TIMEOUT = 20.0
_FIELD = re.compile(r"(\w+)=(\S*)")
_GPU = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)")


def _scontrol(*args: str) -> str:
    try:
        r = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise KitError(f"preflight: scontrol {' '.join(args)} failed: {e}") from None
    if r.returncode != 0 and "not found" not in r.stderr + r.stdout:
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise KitError(f"preflight: scontrol {' '.join(args)} failed: {why} (is the SLURM controller reachable?)")
    return r.stdout if r.returncode == 0 else ""


def _partitions() -> list[dict]:
    return [dict(_FIELD.findall(line)) for line in _scontrol("show", "partition", "-o").splitlines() if line.strip()]


def _partition(name) -> dict:
    parts = _partitions()
    if name is None:
        default = [p for p in parts if p.get("Default") == "YES"]
        if not default:
            raise KitError("slurm.partition: not set and the cluster has no default partition; name one")
        return default[0]
    for p in parts:
        if p.get("PartitionName") == name:
            return p
    names = ", ".join(p.get("PartitionName", "?") for p in parts) or "none"
    raise KitError(f"slurm.partition {name}: no such partition on this cluster (partitions: {names})")


def _node_gpus(nodelist: str) -> dict[str, int]:
    nodes = {}
    for line in _scontrol("show", "node", "-o", nodelist).splitlines():
        fields = dict(_FIELD.findall(line))
        if "NodeName" in fields:
            nodes[fields["NodeName"]] = sum(int(n) for n in _GPU.findall(fields.get("Gres", "")))
    return nodes


def _check_shape(part: dict, nodes: int, gpus: int) -> str:
    name = part.get("PartitionName", "?")
    gpus_by_node = _node_gpus(part.get("Nodes", ""))
    have = len(gpus_by_node)
    if nodes > have:
        raise KitError(f"--nodes {nodes}: partition {name} has {have} node(s) ({part.get('Nodes', '')}); "
                       f"ask for at most {have}")
    fit = [n for n, g in gpus_by_node.items() if g >= gpus]
    what = ", ".join(f"{n}: {g}" for n, g in sorted(gpus_by_node.items()))
    if gpus and len(fit) < nodes:
        raise KitError(f"--gpus {gpus}: partition {name} has {len(fit)} node(s) with {gpus} or more GPUs, "
                       f"{nodes} needed (GPUs per node: {what}); lower --gpus, or --gpus 0 for a CPU job")
    return f"{nodes} node(s) x {gpus} GPU(s) fit partition {name} (GPUs per node: {what})"


def _check_tools() -> str:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise KitError(f"preflight: {', '.join(missing)} not found on PATH; run kit where the SLURM client "
                       "commands are installed")
    return ", ".join(shutil.which(t) for t in TOOLS)


def _check_workdir(cluster) -> str:
    if not os.path.isdir(cluster.workdir):
        raise KitError(f"workdir {cluster.workdir}: no such directory (the nodes' shared working directory)")
    return cluster.workdir


def _check_script(job, cluster) -> str:
    script = job.entrypoint.script
    if script is not None and not os.path.isfile(os.path.join(cluster.workdir, script)):
        raise KitError(f"entrypoint.script {script}: no such file in the node's workdir {cluster.workdir}; "
                       "a relative script path is taken from the workdir")
    return script or f"module {job.entrypoint.module} (checked on the nodes when it starts)"


def checks(plan, job, cluster) -> list:
    """(name, check) in order; each check returns a detail line or raises a one-line KitError. Without a plan
    (doctor without --job) the shape checked is one node with the cluster's GPUs per node."""
    nodes = plan.world.num_machines if plan is not None else 1
    gpus = (plan.world.procs_per_node if plan.world.device == "cuda" else 0) if plan is not None \
        else cluster.gpus_per_node
    partition = cluster.slurm.partition if cluster.slurm is not None else None
    found = []
    out = [("slurm tools", _check_tools),
           ("partition", lambda: found.append(_partition(partition)) or found[0].get("PartitionName", "?")),
           ("nodes and GPUs", lambda: _check_shape(found[0], nodes, gpus)),
           ("workdir", lambda: _check_workdir(cluster))]
    if job is not None:
        out.append(("entrypoint", lambda: _check_script(job, cluster)))
    return out


def preflight_slurm(plan, job, cluster) -> None:
    """Tools, partition, shape, workdir and entrypoint script, checked from the submitting machine (it shares
    the workdir with the nodes). The first problem raises."""
    for _, check in checks(plan, job, cluster):
        check()


def doctor_rows(cluster, job, plan) -> list[tuple[str, str, str, str]]:
    """The same checks for `kit doctor`, as (where, check, verdict, detail) rows; a check that needs the
    partition is skipped when the partition check failed."""
    rows, failed = [], set()
    for name, check in checks(plan, job, cluster):
        if name == "nodes and GPUs" and "partition" in failed:
            rows.append(("slurm", name, "SKIP", "needs the partition"))
            continue
        try:
            rows.append(("slurm", name, "PASS", check()))
        except KitError as e:
            failed.add(name)
            rows.append(("slurm", name, "FAIL", str(e)))
    return rows

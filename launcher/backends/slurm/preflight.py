"""Before `sbatch`: can this job ever run on that partition? One line and exit 2 on the first problem (69 when
scontrol itself fails), nothing queued. A job asking for more nodes or GPUs than the partition has would otherwise
wait in the queue forever. Also `kit doctor` on a SLURM cluster: the tools, the partition, the workdir, and with
`--job` the environment check a run's tasks make.
The checks run where the SLURM commands run (transport/where.py): this machine, or the login host."""

import json
import os
import re
import shlex

from launcher.backends.slurm.placement import where_for
from launcher.errors import KitError, Option, SchedulerError
from launcher.render.envcheck import SOURCE
from launcher.render.shell import node_command
from launcher.transport.where import CommandError

# `kit doctor --job` on a SLURM cluster: the environment check a run's tasks make (render/envcheck.py), taken in one
# short step on as many nodes as the job asks for, as rows (insight/drift.py).

MARK = "kit-doctor:env "
WAIT = 60  # seconds SLURM may take to find the nodes free (srun --immediate)


def _program(kind: str, target: str) -> str:
    return (
        SOURCE + "import json as _kit_json\n"
        f"print({MARK!r} + _kit_json.dumps({{'host': os.environ.get('SLURMD_NODENAME') or os.uname()[1], "
        f"'env': kit_env_fingerprint({kind!r}, {target!r})}}), flush=True)\n"
    )


def env_rows(cluster, job, plan, where, partition) -> list:
    """(host, check, verdict, detail) rows; one SKIP row when there is nothing to compare or no step ran."""
    nodes = plan.world.num_machines if plan is not None else 0
    if nodes < 2 or job.env_check == "off":
        return [("slurm", "environment", "SKIP", "a run of one node (or env_check: off) compares nothing")]
    kind, target = ("module", job.entrypoint.module) if job.entrypoint.module else ("script", job.entrypoint.script)
    python = plan.nodes[0].argv[0]
    text = node_command(cluster.workdir, tuple(cluster.setup), {}, (python, "-c", _program(kind, target)))
    argv = [
        "srun",
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        f"--immediate={WAIT}",
        "--job-name=kit-doctor",
        *([f"--partition={partition}"] if partition else []),
        "bash",
        "-c",
        text,
    ]
    try:
        r = where.run(argv, cwd=where.absolute(cluster.workdir), timeout=WAIT + 120)
    except (CommandError, KitError) as e:
        return [("slurm", "environment", "FAIL", f"could not run a step to compare the nodes: {e}")]
    said = [json.loads(ln.split(MARK, 1)[1]) for ln in r.out.splitlines() if MARK in ln]
    if len(said) < nodes:
        last = (r.err.strip().splitlines() or ["no output"])[-1]
        return [
            (
                "slurm",
                "environment",
                "FAIL",
                f"{len(said)} of {nodes} node(s) answered ({shlex.join(argv[:5])} ...: {last})",
            )
        ]
    from launcher.insight.drift import doctor_rows

    return doctor_rows(sorted(((s["host"], s["env"]) for s in said), key=lambda hs: hs[0]))


TOOLS = ("sbatch", "srun", "scontrol")
TIMEOUT = 20.0
_FIELD = re.compile(r"(\w+)=(\S*)")
_GPU = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)")


def _scontrol(where, *args: str) -> str:
    try:
        r = where.run(["scontrol", *args], timeout=TIMEOUT)
    except CommandError as e:
        raise SchedulerError(
            f"preflight: scontrol {' '.join(args)} failed: {e}", command=f"scontrol {' '.join(args)}", said=str(e)
        ) from None
    if r.code != 0 and "not found" not in r.err + r.out:
        why = (r.err.strip().splitlines() or [f"exit {r.code}"])[-1]
        raise SchedulerError(
            f"preflight: scontrol {' '.join(args)} failed: {why} (is the SLURM controller reachable?)",
            command=f"scontrol {' '.join(args)}",
            said=why,
        )
    return r.out if r.code == 0 else ""


def _partitions(where) -> list[dict]:
    return [
        dict(_FIELD.findall(line)) for line in _scontrol(where, "show", "partition", "-o").splitlines() if line.strip()
    ]


def _partition(where, name) -> dict:
    parts = _partitions(where)
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


def _node_gpus(where, nodelist: str) -> dict[str, int]:
    nodes = {}
    for line in _scontrol(where, "show", "node", "-o", nodelist).splitlines():
        fields = dict(_FIELD.findall(line))
        if "NodeName" in fields:
            nodes[fields["NodeName"]] = sum(int(n) for n in _GPU.findall(fields.get("Gres", "")))
    return nodes


def _check_shape(where, part: dict, nodes: int, gpus: int) -> str:
    name = part.get("PartitionName", "?")
    gpus_by_node = _node_gpus(where, part.get("Nodes", ""))
    have = len(gpus_by_node)
    if nodes > have:
        raise KitError(
            Option("nodes", nodes),
            f": partition {name} has {have} node(s) ({part.get('Nodes', '')}); ask for at most {have}",
        )
    fit = [n for n, g in gpus_by_node.items() if g >= gpus]
    what = ", ".join(f"{n}: {g}" for n, g in sorted(gpus_by_node.items()))
    if gpus and len(fit) < nodes:
        raise KitError(
            Option("gpus", gpus),
            f": partition {name} has {len(fit)} node(s) with {gpus} or more GPUs, "
            f"{nodes} needed (GPUs per node: {what}); lower ",
            Option("gpus"),
            ", or ",
            Option("gpus", 0),
            " for a CPU job",
        )
    return f"{nodes} node(s) x {gpus} GPU(s) fit partition {name} (GPUs per node: {what})"


def _check_tools(where) -> str:
    try:
        found = where.which(TOOLS)
    except CommandError as e:
        raise KitError(f"preflight: cannot look for {', '.join(TOOLS)} on {where.where}: {e}") from None
    missing = [t for t in TOOLS if not found[t]]
    if missing:
        fix = (
            "set slurm.login_host to a machine that has them"
            if not where.remote
            else "install them there or pick another slurm.login_host"
        )
        raise KitError(f"preflight: {', '.join(missing)} not found on PATH on {where.where}; {fix}")
    return ", ".join(found[t] for t in TOOLS)


def _check_workdir(where, workdir: str) -> str:
    if not where.is_dir(workdir):
        raise KitError(f"workdir {workdir}: no such directory on {where.where} (the nodes' shared working directory)")
    return where.absolute(workdir)


def _check_script(where, entrypoint, workdir: str) -> str:
    script = entrypoint.script
    if script is not None and not where.is_file(os.path.join(workdir, script)):
        raise KitError(
            f"entrypoint.script {script}: no such file in the node's workdir {workdir}; "
            "a relative script path is taken from the workdir"
        )
    return script or f"module {entrypoint.module} (checked on the nodes when it starts)"


def _check_login(where) -> str:
    where.reach()  # connects and logs in, host key checked; one line naming the host on failure
    return where.where


def checks(plan, where, partition, workdir: str, entrypoint, default_gpus: int = 0) -> list:
    """(name, check) in order; each check returns a detail line or raises a one-line KitError. Without a plan
    (doctor without --job) the shape checked is one node with the cluster's GPUs per node (`default_gpus`);
    without an entrypoint (the same) the script is not looked for."""
    nodes = plan.world.num_machines if plan is not None else 1
    gpus = (plan.world.procs_per_node if plan.world.device == "cuda" else 0) if plan is not None else default_gpus
    found: list = []

    def partition_found() -> str:
        found.append(_partition(where, partition))
        return found[0].get("PartitionName", "?")

    login = [("login host", lambda: _check_login(where))] if where.remote else []
    out = [
        *login,
        ("slurm tools", lambda: _check_tools(where)),
        ("partition", partition_found),
        ("nodes and GPUs", lambda: _check_shape(where, found[0], nodes, gpus)),
        ("workdir", lambda: _check_workdir(where, workdir)),
    ]
    if entrypoint is not None:
        out.append(("entrypoint", lambda: _check_script(where, entrypoint, workdir)))
    return out


def preflight_slurm(plan, where, partition, workdir: str, entrypoint) -> None:
    """Login host (when set), tools, partition, shape, workdir and entrypoint script, checked where the SLURM
    commands run (that machine shares the workdir with the nodes). The first problem raises."""
    for _, check in checks(plan, where, partition, workdir, entrypoint):
        check()


def doctor_rows(cluster, job, plan) -> list[tuple[str, str, str, str]]:
    """The same checks for `kit doctor`, as (where, check, verdict, detail) rows; a check that needs the
    partition is skipped when the partition check failed."""
    rows, failed = [], set()
    partition = cluster.slurm.partition if cluster.slurm is not None else None
    entrypoint = job.entrypoint if job is not None else None
    for name, check in checks(plan, where_for(cluster), partition, cluster.workdir, entrypoint, cluster.gpus_per_node):
        if "login host" in failed:
            rows.append(("slurm", name, "SKIP", "needs the login host"))
            continue
        if name == "nodes and GPUs" and "partition" in failed:
            rows.append(("slurm", name, "SKIP", "needs the partition"))
            continue
        try:
            rows.append(("slurm", name, "PASS", check()))
        except KitError as e:
            failed.add(name)
            rows.append(("slurm", name, "FAIL", str(e)))
    if job is not None and not failed:
        rows += env_rows(cluster, job, plan, where_for(cluster), partition)
    return rows

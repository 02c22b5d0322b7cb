"""`kit doctor --job` on a SLURM cluster: the environment check a run's tasks make (render/envcheck.py), taken in
one short step on as many nodes as the job asks for, as rows (insight/drift.py)."""

import json
import shlex

from launcher.errors import KitError
from launcher.render.envcheck import SOURCE
from launcher.render.shell import node_command
from launcher.transport.where import CommandError

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

"""Before a local run writes or starts anything: the node's setup lines succeed, the entrypoint exists as the node
will see it, and the master port is free. One-line KitError (exit 2) on the first problem."""

import os
import subprocess

from launcher.backends.local.bounded import run_bounded
from launcher.environment import node_process_env
from launcher.errors import KitError
from launcher.planning.model import LaunchPlan
from launcher.preflight.entrypoint import CheckResult, entrypoint_check_command, interpret_entrypoint_check
from launcher.preflight.port import check_master_port

CHECK_TIMEOUT = 120.0  # setup lines (module load, activate) may be slow on a busy machine


def _run_local(command: str, base_dir: str, env: dict) -> CheckResult:
    try:
        r = run_bounded(command, base_dir, env, CHECK_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise KitError(
            f"preflight: the entrypoint check did not finish within {CHECK_TIMEOUT:.0f} s (a slow setup line?)"
        ) from None
    return CheckResult(r.returncode, r.stdout, r.stderr)


def preflight(plan: LaunchPlan, entrypoint, workdir: str, base_dir: str, environ=None) -> None:
    """`entrypoint`: the job's (module, script); `workdir`: the cluster's, relative to `base_dir`."""
    check_master_port(plan.world.master_port)
    check_entrypoint(plan, entrypoint, workdir, base_dir, environ)


def check_entrypoint(plan: LaunchPlan, entrypoint, workdir: str, base_dir: str, environ=None) -> None:
    """The node's setup lines succeed and its interpreter finds the entrypoint in its workdir."""
    environ = os.environ if environ is None else environ
    # Local nodes share one workdir, setup and interpreter: node 0 stands for all of them.
    node = plan.nodes[0]
    command = entrypoint_check_command(node, entrypoint, plan.runtime_vars)
    result = _run_local(command, base_dir, node_process_env(plan, node, environ))
    where = os.path.normpath(os.path.join(base_dir, workdir))
    problem = interpret_entrypoint_check(entrypoint, node, result, where)
    if problem:
        raise KitError(problem)

"""Before a local run writes or starts anything: the node's setup lines succeed, the entrypoint exists as the node
will see it, and the master port is free (a bind test). One-line KitError (exit 2) on the first problem. The
checks run in a bounded shell (run_bounded), which the backend also uses to look at the master from here."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
from typing import Optional

from launcher.environment import node_process_env
from launcher.errors import KitError, Option
from launcher.planning.model import LaunchPlan
from launcher.preflight.entrypoint import CheckResult, entrypoint_check_command, interpret_entrypoint_check

# A short local shell (the checks before a run, a look at the master from this machine) that leaves nothing behind:
# it runs in its own process group, and a timeout or a Ctrl-C kills the whole group (a setup line's `sleep`, a
# `module load` it started), not only bash.


def run_bounded(command: str, cwd: str, env: dict, timeout: float) -> subprocess.CompletedProcess:
    """`bash -c command` with stdin /dev/null; raises subprocess.TimeoutExpired after `timeout` seconds."""
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:  # the timeout, or the user's Ctrl-C: nothing of the check may outlive kit
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# Is the master port free on this machine? A bind test, as the rendezvous store will bind it.

SEARCH = 200  # ports tried after a busy one, to suggest a free --port


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Like the store: a port in TIME_WAIT after an earlier run is free; one that something listens on is not.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_port_after(port: int) -> Optional[int]:
    return next((p for p in range(port + 1, min(port + SEARCH, 65535) + 1) if port_is_free(p)), None)


def check_master_port(port: int) -> None:
    """Raise a one-line KitError when `port` is taken. Not a reservation: it only catches a clash before start."""
    if port_is_free(port):
        return
    free = free_port_after(port)
    hint = ("pass a free one, e.g. ", Option("port", free)) if free else ("pass a free one with ", Option("port"))
    raise KitError(f"master port {port} is already in use on this machine (another run or service); ", hint)


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

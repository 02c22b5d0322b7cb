"""The plan of a restart (the job's `restarts: N`): the same world started again on a fresh master port (attempt k
uses the planned port + k - 1: a port the dead world's store may still hold is never reused at once), with a host
that was lost replaced by one of the plan's spare hosts. Pure: the planned plan in, attempt k's plan out, and the
dry-run states the rule."""

import dataclasses
from typing import Iterable

import yaml

from launcher.errors import KitError
from launcher.planning.model import LaunchPlan, NodePlan
from launcher.render.shell import join_argv
from launcher.render.text import to_yaml


def attempt_port(plan: LaunchPlan, attempt: int) -> int:
    port = plan.world.master_port + attempt - 1
    return port if port <= 65535 else 1024 + (port - 65536)


def _with_flag(argv: tuple, flag: str, value: str) -> tuple:
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        if word == flag:
            out[i + 1] = value
            break
    return tuple(out)


RDZV_ID_ENV = "PET_RDZV_ID"   # torchrun's --rdzv-id from the environment (accelerate's launcher reads it too)
_RDZV_PREFIX = "kit-attempt-"


def rdzv_id(attempt: int) -> str:
    """Attempt k's rendezvous id: torchrun names its log directories `<id>_<random>`, so an attempt's world is seen
    to form by its own directories, never by the ones an earlier attempt left."""
    return f"{_RDZV_PREFIX}{attempt}"


def _relaunch(node: NodePlan, argv: tuple, host: str, attempt: int) -> NodePlan:
    """The node with its launch line (the command's last line) and host replaced (kit starts these nodes itself:
    no variable is left to expand in the line), and the attempt's rendezvous id exported before it."""
    old = "exec " + join_argv(node.argv) + "\n"
    if not node.command.endswith(old):
        raise KitError(f"node {node.machine_rank}: its command does not end in its launch line; cannot restart it")
    line = f"export {RDZV_ID_ENV}={rdzv_id(attempt)}\nexec {join_argv(argv)}\n"
    return dataclasses.replace(node, argv=argv, command=node.command[:-len(old)] + line, host=host)


def attempt_of(node: NodePlan) -> int:
    """Which attempt a node's command belongs to (1: the planned command)."""
    marker = f"export {RDZV_ID_ENV}={_RDZV_PREFIX}"
    at = node.command.rfind(marker)
    if at < 0:
        return 1
    digits = node.command[at + len(marker):].split("\n", 1)[0]
    return int(digits) if digits.isdigit() else 1


def for_attempt(plan: LaunchPlan, attempt: int, lost_hosts: Iterable[str] = ()) -> LaunchPlan:
    """Attempt `attempt`'s plan (1 is the plan itself). Nodes on a lost host move to the next unused spare host;
    without one, the attempt is refused (KitError)."""
    if attempt <= 1:
        return plan
    lost = set(lost_hosts)
    spares = [s for s in plan.spare_hosts if s[0] not in lost]
    taken = {n.host for n in plan.nodes if n.host not in lost}
    moved = {}
    for node in plan.nodes:
        if node.host in lost and node.host not in moved:
            free = [s for s in spares if s[0] not in taken and s[0] not in {m[0] for m in moved.values()}]
            if not free:
                raise KitError(f"host {node.host} was lost and the cluster has no spare host left to replace it")
            moved[node.host] = free[0]
    port = attempt_port(plan, attempt)
    head = plan.nodes[0]
    master = moved[head.host][1] if head.host in moved else plan.world.master_addr
    nodes = []
    for node in plan.nodes:
        argv = _with_flag(_with_flag(node.argv, "--main_process_port", str(port)), "--main_process_ip", master)
        host = moved[node.host][0] if node.host in moved else node.host
        nodes.append(_relaunch(node, argv, host, attempt))
    files = {}
    for path, content in plan.files.items():
        if path.endswith(".yaml") and "/accelerate" in "/" + path:
            data = yaml.safe_load(content)
            data["main_process_port"] = port
            if "main_process_ip" in data:
                data["main_process_ip"] = master
            content = to_yaml(data)
        files[path] = content
    world = dataclasses.replace(plan.world, master_port=port, master_addr=master)
    return dataclasses.replace(plan, nodes=tuple(nodes), files=files, world=world)

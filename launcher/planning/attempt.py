"""Attempt k of a run (the job's `restarts: N`), as an input of the planner: what changes from attempt 1. The master
port is the planned one + k - 1 (a port the dead world's store may still hold is never reused at once), a host that
was lost is replaced by the first spare host not lost, and the attempt's rendezvous id names its world. Every
launcher renders attempt k from these as it renders attempt 1: nothing is patched after rendering."""

from dataclasses import dataclass
from typing import Optional

from launcher.errors import KitError

RDZV_ID_ENV = "PET_RDZV_ID"  # torchrun's --rdzv-id from the environment (accelerate's launcher reads it too)
_RDZV_PREFIX = "kit-attempt-"


@dataclass(frozen=True)
class Attempt:
    number: int = 1
    lost_hosts: tuple[str, ...] = ()  # every host lost by an earlier attempt, by name


def attempt_port(planned: int, number: int) -> int:
    port = planned + number - 1
    return port if port <= 65535 else 1024 + (port - 65536)


def rdzv_id(number: int) -> str:
    """Attempt k's rendezvous id: torchrun names its log directories `<id>_<random>`, so an attempt's world is seen
    to form by its own directories, never by the ones an earlier attempt left."""
    return f"{_RDZV_PREFIX}{number}"


def rdzv_env(number: int) -> dict[str, str]:
    """The variable a restarted world's nodes export (none for attempt 1: torchrun's default id)."""
    return {RDZV_ID_ENV: rdzv_id(number)} if number > 1 else {}


def attempt_of(node) -> int:
    """Which attempt a node's plan belongs to (1: the planned command)."""
    value: Optional[str] = node.env.get(RDZV_ID_ENV)
    digits = value[len(_RDZV_PREFIX) :] if value and value.startswith(_RDZV_PREFIX) else ""
    return int(digits) if digits.isdigit() else 1


def replace_lost(hosts: tuple, spares: tuple, lost: tuple[str, ...]) -> tuple[tuple, tuple]:
    """(the attempt's hosts, the spares left): each lost host's nodes move to the first spare that is neither lost
    nor in use; without one, the attempt is refused (KitError). Hosts have `.name`."""
    gone = set(lost)
    free = [s for s in spares if s.name not in gone and s.name not in {h.name for h in hosts}]
    moved = {}
    for host in hosts:
        if host.name in gone and host.name not in moved:
            if not free:
                raise KitError(f"host {host.name} was lost and the cluster has no spare host left to replace it")
            moved[host.name] = free.pop(0)
    return tuple(moved.get(h.name, h) for h in hosts), tuple(free)


__all__ = ["Attempt", "attempt_port", "rdzv_id", "rdzv_env", "attempt_of", "replace_lost", "RDZV_ID_ENV"]

"""What a run record's state means now: a "running" run whose supervisor is gone is not running."""

from launcher.supervise import tree

ACTIVE = ("starting", "running")
# A SLURM job waiting in the queue (first time or after a requeue) is not over either.
QUEUED = ("pending", "requeued")
NOT_OVER = ACTIVE + QUEUED


def supervisor(status: dict):
    return tree.same_process(status.get("supervisor_pid"), status.get("supervisor_start"))


def live_watchdogs(status: dict) -> list:
    found = []
    for node in status.get("nodes", []):
        proc = tree.same_process(node.get("pid"), node.get("start"))
        if proc is not None:
            found.append(proc)
    return found


def current_state(status: dict) -> tuple[str, str]:
    """(state, note). `lost`: the record says running but the kit process supervising it is gone."""
    state = status.get("state", "?")
    if state not in ACTIVE or status.get("backend", "local") != "local":
        return state, ""
    if state == "starting" and not status.get("supervisor_pid"):
        return state, ""
    if supervisor(status) is not None:
        return state, ""
    left = live_watchdogs(status)
    if left:
        return "lost", (f"its supervisor (kit, pid {status.get('supervisor_pid')}) is gone; "
                        f"{len(left)} node(s) still stopping")
    return "lost", (f"its supervisor (kit, pid {status.get('supervisor_pid')}) died before recording the "
                    "outcome; its nodes stopped themselves")

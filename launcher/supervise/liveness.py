"""Is the kit process that follows a run (its supervisor) still there, and the nodes' watchdogs on this machine?
A "running" record whose supervisor is gone is not running. Stopping a supervisor waits until it has gone."""

import logging
import time

from launcher.status import ACTIVE, NOT_OVER, QUEUED, RunStatus  # noqa: F401  (the states, for callers)
from launcher.supervise import tree

log = logging.getLogger(__name__)

CANCEL_MARGIN = 30.0  # on top of the grace period: the supervisor's own shutdown and the log flush


def supervisor(status: RunStatus):
    return tree.same_process(status.supervisor_pid, status.supervisor_start)


def live_watchdogs(status: RunStatus) -> list:
    found = []
    for node in status.nodes:
        proc = tree.same_process(node.pid, node.start)
        if proc is not None:
            found.append(proc)
    return found


def wait_gone(procs, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = [p for p in procs if _alive(p)]
        if not procs:
            return True
        time.sleep(0.2)
    return False


def _alive(proc) -> bool:
    try:  # is_running() also says False when the pid now belongs to another process
        return proc.is_running() and proc.status() != "zombie"
    except Exception:
        return False


def stop_supervisor(status: RunStatus, where: str = "") -> float:
    """Ask a live supervisor to stop its run (it tears its nodes down and records the outcome), wait for it to
    exit; return the run's grace period."""
    grace = float(status.teardown_grace or 40.0)
    boss = supervisor(status)
    if boss is not None:
        log.info(f"run {status.run_id or '?'}: stopping{where} (ranks get up to {grace:.0f} s to save)")
        boss.terminate()
        wait_gone([boss], grace + CANCEL_MARGIN)
    return grace

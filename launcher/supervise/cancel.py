"""`kit cancel` of a run whose processes live on this machine: ask its supervisor, else its watchdogs, else
stop whatever still carries the run's id; return only when nothing of the run is left."""

import time

from launcher.supervise import liveness, tree

CANCEL_MARGIN = 30.0  # on top of the grace period: the supervisor's own shutdown and the log flush


def _wait_gone(procs, timeout: float) -> bool:
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


def stop_supervisor(status: dict, where: str = "") -> float:
    """Ask a live supervisor to stop its run (it tears its nodes down and records the outcome), wait for it to
    exit; return the run's grace period."""
    grace = float(status.get("teardown_grace") or 40.0)
    boss = liveness.supervisor(status)
    if boss is not None:
        print(f"run {status.get('run_id', '?')}: stopping{where} (ranks get up to {grace:.0f} s to save)",
              flush=True)
        boss.terminate()
        _wait_gone([boss], grace + CANCEL_MARGIN)
    return grace


def cancel_local_run(record, status: dict) -> str:
    run_id = status.get("run_id", "?")
    grace = stop_supervisor(status)
    dogs = liveness.live_watchdogs(status)
    for dog in dogs:
        dog.terminate()  # a watchdog stops its node on SIGTERM, with the grace period
    _wait_gone(dogs, grace + CANCEL_MARGIN)
    left = tree.run_processes(run_id)  # last resort: anything still carrying this run's id
    if left:
        tree.terminate(left, grace=grace)
    if record.read_status().get("state") in liveness.ACTIVE:
        record.update_status(state="cancelled", finished_at=time.time())
    return f"run {run_id}: cancelled; no process of it is left"

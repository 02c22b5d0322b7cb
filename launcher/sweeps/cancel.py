"""`kit cancel <sweep>`: what the backend submitted as one (a SLURM job array) it cancels as one; otherwise stop
the sweep's driver (it stops starting trials and stops each running one), then cancel whatever trial still runs
through its own backend, as `kit cancel <trial>` would; return only when no process of any trial is left."""

import logging
import os
import time

import psutil

from launcher import records
from launcher.backends import registry
from launcher.status import ACTIVE, NOT_OVER, QUEUED
from launcher.supervise import tree
from launcher.supervise.liveness import CANCEL_MARGIN
from launcher.sweeps.rerun import trial_state
from launcher.sweeps.table import collect
from launcher.states import RunState

log = logging.getLogger(__name__)
STILL = ACTIVE + (RunState.LOST,)


def _grace(run_root: str, run_ids: list) -> float:
    graces = [records.RunRecord(os.path.join(run_root, r)).read_status().teardown_grace for r in run_ids]
    return max([float(g) for g in graces if g] or [40.0])


def cancel_when_submitted(trial: records.RunRecord, wait: float = 120.0) -> None:
    """Cancel one trial's run as `kit cancel <trial>` does, once its scheduler knows its job (a trial stopped
    while its job was being submitted); for a run whose job outlives its kit supervisor (SLURM: scancel)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        status = trial.read_status() if trial.exists() else None
        if status is not None and (status.state not in NOT_OVER or status.handle.job_id):
            break
        time.sleep(0.5)
    status = trial.read_status()
    if status.state in NOT_OVER and status.handle.job_id:
        try:
            log.info(registry.backend(status.backend).cancel(trial, status))
        except Exception as e:  # the supervisor's own following still ends it when the job ends
            log.warning(f"kit: could not cancel {status.run_id}: {e}")


def cancel_sweep(record) -> str:
    run_root = os.path.dirname(record.path)
    view = collect(record, run_root)  # every trial's state now (and a finished sweep's end, recorded)
    data = record.read()
    sweep_id = data["sweep_id"]
    run_ids = [t["run_id"] for t in data["trials"]]
    driver = tree.same_process(data.get("driver_pid"), data.get("driver_start"))
    if driver is None and not any(t["state"] in STILL + QUEUED for t in view["trials"]):
        return f"sweep {sweep_id}: no trial of it is running or queued ({view['state']}); nothing to cancel"
    said = registry.backend(data.get("backend") or registry.DEFAULT).cancel_many(data, record.path)
    if said is not None:
        record.update(state=RunState.CANCELLED, finished_at=time.time())
        return said
    if driver is not None:
        log.info(
            f"sweep {sweep_id}: stopping its driver (kit, pid {driver.pid}) and every running trial "
            f"(ranks get up to {_grace(run_root, run_ids):.0f} s to save)"
        )
        driver.terminate()
        # The driver ends once each trial it runs has ended; a trial started just now records its grace late.
        psutil.wait_procs([driver], timeout=_grace(run_root, run_ids) + 2 * CANCEL_MARGIN)
    for run_id in run_ids:  # what the driver did not stop (it died, or a trial outlived it)
        trial = records.RunRecord(os.path.join(run_root, run_id))
        state, status = trial_state(trial.path)
        if state in STILL:
            log.info(registry.backend(status.backend).cancel(trial, status))
    if record.read().get("state") in ACTIVE:
        record.update(state=RunState.CANCELLED, finished_at=time.time())
    return f"sweep {sweep_id}: cancelled; no process of any trial is left"

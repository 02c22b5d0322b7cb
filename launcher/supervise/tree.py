"""Process trees on this machine, through psutil: find exactly one run's processes and stop them.

A process is identified by (pid, create time), never by pid alone, so a recycled pid is never signalled; a
run's processes are found by the KIT_RUN_ID=<run> that kit puts in every node's environment, so processes of
other runs and other users are never touched (no `pkill -f`, no matching by name).
"""

import time
from typing import Iterable, Optional

import psutil

from launcher.supervise import watchdog


def same_process(pid: Optional[int], created: Optional[float]) -> Optional[psutil.Process]:
    """The process `pid` if it is still the one created at `created`, else None. Without a start time there is
    no telling it from a process that took the pid over since: None (a record's pid is never acted on alone)."""
    if not pid or created is None:
        return None
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - created) > 0.01:
            return None
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc
    except psutil.Error:
        return None


def started_at(pid: int) -> Optional[float]:
    """When process `pid` started (psutil's create_time), to be kept with its pid; None if it is gone."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def live_descendants() -> list[psutil.Process]:
    """Every live process below this one (zombies excluded; a subreaper's include re-parented orphans): the
    watchdog's walk of /proc, one definition of the tree, as psutil handles. Each is kept only if it is still
    the process the walk saw (same start time) once its handle exists."""
    alive = []
    for pid, start in watchdog.live_descendants():
        try:
            proc = psutil.Process(pid)
        except psutil.Error:
            continue
        now = watchdog.proc_stat(pid)
        if now is not None and now[2] == start:
            alive.append(proc)
    return alive


def run_processes(run_id: str) -> list[psutil.Process]:
    """Every live process on this machine whose environment carries KIT_RUN_ID=run_id."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("KIT_RUN_ID") == run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def terminate(procs: Iterable[psutil.Process], grace: float, poll: float = 0.1) -> None:
    """SIGTERM each, SIGKILL whatever is still alive after `grace` seconds; returns as soon as all are gone."""
    procs = list(procs)
    for proc in procs:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _, procs = psutil.wait_procs(procs, timeout=poll)
        if not procs:
            return
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)

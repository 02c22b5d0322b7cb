"""Process-group bookkeeping for runs on this machine: find and stop exactly one run's processes."""

import os
import signal
import time


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def run_processes(run_id: str, pgids: list[int]) -> list[int]:
    """PIDs in the given process groups whose environment carries KIT_RUN_ID=run_id.

    Both conditions: a recycled pgid cannot make us kill a stranger, and another run's processes
    (a different KIT_RUN_ID) are never touched."""
    marker = f"KIT_RUN_ID={run_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if os.getpgid(pid) not in pgids:
                continue
        except OSError:
            continue
        if marker in _read(f"/proc/{pid}/environ").split(b"\0"):
            found.append(pid)
    return found


def start_time(pid: int):
    """Kernel start time of a process (clock ticks since boot): with the pid, it names one process."""
    stat = _read(f"/proc/{pid}/stat").decode(errors="replace")
    if not stat:
        return None
    # Field 22; the command name (field 2) may contain spaces, so count from its closing parenthesis.
    return int(stat.rsplit(")", 1)[1].split()[19])


def signal_groups(pgids: list[int], sig: int) -> None:
    for pgid in pgids:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def groups_alive(pgids: list[int]) -> bool:
    for pgid in pgids:
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            continue
    return False


def terminate_groups(pgids: list[int], grace: float = 10.0) -> None:
    """SIGTERM every group, then SIGKILL whatever is left after `grace` seconds."""
    signal_groups(pgids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and groups_alive(pgids):
        time.sleep(0.1)
    signal_groups(pgids, signal.SIGKILL)

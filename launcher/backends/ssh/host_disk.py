"""A full disk on a host: its ranks' teed output files there cannot be written, so what a failing rank said last
may be lost or cut mid-line. Asked of the host after a failure, it is said in the failure line."""

import shlex
from typing import Optional

from launcher.supervise.disk import FULL_BELOW, full_note


def host_disk_note(conn, host: str, workdir: str, timeout: float = 10.0) -> Optional[str]:
    """The note for the failure when `workdir`'s disk on the host is full now, else None (also when the host
    cannot be asked)."""
    if conn is None or not conn.alive():
        return None
    try:
        code, out, _ = conn.run(
            f"df -Pk -- {shlex.quote(workdir)} 2>/dev/null | awk 'NR==2 {{print $4}}'", timeout=timeout
        )
    except Exception:  # paramiko's errors, a timeout: nothing to add
        return None
    free = out.strip()
    if code != 0 or not free.isdigit() or int(free) * 1024 >= FULL_BELOW:
        return None
    return full_note(f"{host}:{workdir}", int(free) * 1024)


__all__ = ["host_disk_note"]

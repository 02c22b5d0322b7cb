"""Is the master port free on this machine? A bind test, as the rendezvous store will bind it."""

import errno
import socket
from typing import Optional

from launcher.errors import KitError, Option

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

"""What an SSH run's record keeps of its own (its handle): the connection settings to log in again (no secrets),
the host keys accepted for it, and how long each phase of its start took."""

from dataclasses import dataclass
from typing import Optional

from launcher.backends.handle import Handle
from launcher.wellformed import checked, items, mapping


@dataclass(frozen=True)
class SshHandle(Handle):
    ssh: Optional[dict] = checked(None, mapping)  # connection settings (no secrets), to log in again
    accepted_host_keys: Optional[list] = checked(None, items)
    timings: Optional[dict] = checked(None, mapping)  # seconds per phase (bench/ssh_fanout.py reads them)


HANDLE = SshHandle

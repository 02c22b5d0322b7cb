"""A full disk under the run directory: ranks whose own output files there cannot be written die with a bare
`exited 1` (torchrun's tee fails before their words reach any log). When a failure has no words of its own and
that disk is full now, this is its cause."""

import dataclasses
import os
from typing import Optional

from launcher.errors import KitError

FULL_BELOW = 256 * 1024  # bytes free under which a disk counts as full (a log line, a status write would fail)


def full_disk_note(path: str) -> Optional[str]:
    """ "the disk of <path> is full (N KiB free)" when it is, else None (also when it cannot be asked)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    return None if free >= FULL_BELOW else full_note(path, free)


def full_note(where: str, free: int) -> str:
    return (
        f"the disk of {where} is full ({free // 1024} KiB free), where the ranks' output goes; free space or "
        f"pick another run root"
    )


def with_full_disk(failure, note: Optional[str]):
    """The failure said with a full disk as its cause: the rank's own words there may be lost or cut, so they are
    kept only as what was seen last."""
    if failure is None or note is None:
        return failure
    seen = f"; the last line seen: {failure.last_line}" if failure.last_line else ""
    return dataclasses.replace(failure, last_line=note + seen)


def with_disk_cause(result, record):
    """`result` (a backend's Result) with the full disk as its failure's cause, in the record too, when the failure
    has no words of its own and the run directory's disk is full now; else `result` as it is."""
    f = result.failure
    if f is None or f.last_line:
        return result
    note = full_disk_note(record.path)
    if note is None:
        return result
    f = dataclasses.replace(f, last_line=note)
    try:
        record.update_status(failure=f)
    except KitError:  # a record kit will not write over: the line still says it
        pass
    return dataclasses.replace(result, failure=f)

"""Files of a record written safely: whole or not at all (write_atomic), a name claimed once (publish_new), room
kept for a status write on a full disk (reserve_room), and the lock around one read-modify-write (locked)."""

import errno
import fcntl
import os
import tempfile
import time
from contextlib import contextmanager
from typing import Optional

from launcher.errors import KitError, RecordError

LOCK_WAIT = 30.0
RESERVE_BYTES = 64 * 1024


def write_atomic(path: str, text: str, reserve: Optional[str] = None) -> None:
    """Write via a temporary file in the same directory, flushed to disk, and rename: readers see the old file or
    the new one, never half of one; a write that fails (a full disk) leaves no temporary file behind and the old
    file as it was. `reserve`: a file of spare bytes given up (deleted) to make room when the disk is full."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        _replace(path, text)
    except OSError as e:
        if reserve is None or e.errno != errno.ENOSPC or not os.path.exists(reserve):
            raise
        unlink_quietly(reserve)
        _replace(path, text)


def _replace(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise


def reserve_room(path: str) -> None:
    """Keep RESERVE_BYTES at `path` for a status write on a full disk (best effort: no room, no reserve)."""
    try:
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644), "wb") as f:
            f.write(bytes(RESERVE_BYTES))
    except OSError as e:
        if e.errno != errno.ELOOP:  # a symbolic link there is not kit's to remove
            unlink_quietly(path)


def unlink_quietly(path: str) -> None:
    """Remove the file if it is there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def publish_new(path: str, text: str) -> bool:
    """Write `path` only if nothing is there: the complete file appears at once or not at all (a hard link of a
    written temporary file fails when the name exists). False when another process got there first."""
    tmp = f"{path}.new.{os.getpid()}"
    try:
        with os.fdopen(
            os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644), "w", encoding="utf-8"
        ) as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # whatever the umask: a group-writable record is not trusted (untrusted())
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        unlink_quietly(tmp)


@contextmanager
def locked(path: str):
    """An exclusive flock on the file `path` (made if absent), held for one read-modify-write of a record; a
    lock held by another process for over LOCK_WAIT seconds is one line."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as e:  # a record this user cannot lock (read-only, full disk): the write fails after anyway
        if e.errno == errno.ELOOP:
            raise KitError(f"{path} is a symbolic link; kit will not follow it: remove it") from None
        yield
        return
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RecordError(
                        f"{os.path.dirname(path)}: its lock is held for over {LOCK_WAIT:g} s by "
                        f"another process; try again",
                        path=os.path.dirname(path),
                    ) from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # releases the lock

"""Whose records kit acts on: a record (its status file and directory) must be yours, root's or a user's you trust
(--trust-owner), and writable by nobody else, before kit logs in, copies or signals for it."""

import os
from typing import Optional

from launcher.errors import KitError
from launcher.records import STATUS

_TRUSTED_OWNERS: set = set()  # uids the user vouched for (--trust-owner USER), besides themselves and root


def trust_owners(names) -> None:
    """Trust the records of these users (names or uids) as one's own, for this process."""
    import pwd

    for name in names or ():
        try:
            _TRUSTED_OWNERS.add(int(name) if str(name).isdigit() else pwd.getpwnam(name).pw_uid)
        except KeyError:
            raise KitError(f"--trust-owner {name}: no such user on this machine") from None


def untrusted(record, name: str = STATUS) -> Optional[str]:
    """Why kit must not act on this record (log in where it says, copy the files it names, signal the processes it
    lists), or None. As OpenSSH treats a config file: the record's file `name` and its directory must belong to
    you (or root, or a user you trust with --trust-owner) and be writable by nobody else, since anyone who can
    write into a shared run root could otherwise make `kit runs` act in the reader's name."""
    me = os.geteuid()
    for path in (record.file(name), record.path):
        try:
            st = os.stat(path)
        except OSError as e:
            return f"{path}: {e.strerror}"
        if st.st_uid not in (me, 0) and st.st_uid not in _TRUSTED_OWNERS:
            return f"{path} belongs to {_owner(st.st_uid)}, not you"
        if st.st_mode & 0o022:
            return f"{path} is writable by others (mode {st.st_mode & 0o777:o})"
    return None


def _owner(uid: int) -> str:
    import pwd

    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"


def require_trusted(record, name: str = STATUS) -> None:
    why = untrusted(record, name)
    if why:
        raise KitError(
            f"run record {record.path} is not trusted: {why}; kit acts only on records that are yours "
            f"and writable by nobody else (chmod go-w, or --trust-owner USER for a user you trust)"
        )

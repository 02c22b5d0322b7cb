"""Copy a plan's `sync` files into a host's workdir: only what differs (by size and SHA-256, the host hashing
its copies with coreutils' sha256sum), over SFTP, each file through a temporary name. A workdir that is the source
itself on a shared filesystem is recognised (same inode, size and mtime, seen from both sides) and left alone."""

import hashlib
import os
import posixpath
import shlex
import threading
from dataclasses import dataclass
from typing import Optional

from launcher.planning.model import SyncPlan

_PROBES = 3  # files compared (with the directory itself) to recognise the source on a shared filesystem


@dataclass(frozen=True)
class Synced:
    host: str
    workdir: str
    copied: int
    total: int
    shared: bool = False


class LocalDigests:
    """Each file's (size, sha256, mode) on this machine, read once per submission however many hosts ask."""

    def __init__(self, sync: SyncPlan):
        self.sync = sync
        self._lock = threading.Lock()
        self._done: Optional[dict] = None

    def get(self) -> dict:
        with self._lock:
            if self._done is None:
                self._done = {rel: _digest(os.path.join(self.sync.source, rel)) for rel in self.sync.files}
            return self._done


def _digest(path: str) -> tuple[int, str, int]:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    st = os.stat(path)
    return st.st_size, h.hexdigest(), st.st_mode & 0o777


def _stat_line(st: os.stat_result) -> str:
    return f"{st.st_ino} {st.st_size} {int(st.st_mtime)}"


def is_the_source(conn, sync: SyncPlan, workdir: str) -> bool:
    """Is the host's workdir this machine's source directory, seen through a shared filesystem?"""
    probes = list(sync.files[:_PROBES])
    local = [_stat_line(os.stat(sync.source))] + [_stat_line(os.stat(os.path.join(sync.source, p))) for p in probes]
    paths = [workdir] + [posixpath.join(workdir, p) for p in probes]
    code, out, _ = conn.run("stat -L -c '%i %s %Y' -- " + " ".join(shlex.quote(p) for p in paths), timeout=30)
    return code == 0 and out.split("\n")[: len(local)] == local


def _remote_hashes(conn, workdir: str, files: list[str]) -> dict[str, str]:
    """sha256 of each file the host's workdir has (missing ones absent)."""
    listing = b"".join(f.encode("utf-8", "surrogateescape") + b"\0" for f in files)
    command = f"cd {shlex.quote(workdir)} 2>/dev/null && xargs -0 -r sha256sum -- 2>/dev/null"
    _, out, _ = conn.run(command, timeout=max(60.0, len(files) / 50), stdin=listing)
    found = {}
    for line in out.split("\n"):
        digest, sep, name = line.partition("  ")
        if sep and not digest.startswith("\\"):  # an escaped name (a newline in it): copied again, harmless
            found[name] = digest
    return found


def sync_host(conn, sync: SyncPlan, digests: LocalDigests, workdir: str) -> Synced:
    """Bring `workdir` on the host up to date with the sync's files; raises OSError/KitError on failure."""
    if sync.files and is_the_source(conn, sync, workdir):
        return Synced(conn.endpoint.name, workdir, 0, len(sync.files), shared=True)
    local = digests.get()
    remote = _remote_hashes(conn, workdir, list(sync.files))
    changed = [rel for rel in sync.files if remote.get(rel) != local[rel][1]]
    for rel in changed:
        with open(os.path.join(sync.source, rel), "rb") as f:  # streamed: a big file costs no memory
            conn.put(posixpath.join(workdir, rel), f, mode=local[rel][2])
    return Synced(conn.endpoint.name, workdir, len(changed), len(sync.files))


def sync_into(conn, plan, digests: LocalDigests, synced: list) -> str:
    """Copy the sync's changes into each workdir this host's nodes use (each host's Synced added to `synced`); ""
    or the one line saying why not."""
    from launcher.errors import KitError

    workdirs = dict.fromkeys(n.workdir for n in plan.nodes if n.host == conn.endpoint.name)
    try:
        for workdir in workdirs:
            synced.append(sync_host(conn, plan.sync, digests, workdir))
    except (OSError, KitError) as e:
        return f"{conn.endpoint.where}: could not sync {plan.sync.source} into its workdir: {e}"
    except Exception as e:  # paramiko's SSHException and its kin: the host went away mid-copy
        return f"{conn.endpoint.where}: could not sync {plan.sync.source} into its workdir: {e!r}"
    return ""


def summary(synced: list[Synced], source: str) -> str:
    """One line for the console: what was copied where."""
    copied = [s for s in synced if not s.shared]
    shared = [s for s in synced if s.shared]
    parts = []
    if copied:
        # Per host: hosts that share one filesystem find what another has just copied unchanged.
        parts.append(
            ", ".join(f"{s.host}:{s.workdir} {s.copied} of {s.total} copied" for s in copied)
            + " (the others unchanged)"
        )
    if shared:
        parts.append(
            ", ".join(f"{s.host}:{s.workdir}" for s in shared) + f" is {source} itself (a shared "
            f"filesystem): nothing copied there"
        )
    return f"kit: sync from {source}: " + "; ".join(parts)


__all__ = ["LocalDigests", "Synced", "sync_host", "summary", "is_the_source"]

"""Disks of their own for testbed hosts: a tmpfs mounted in one host's mount namespace is seen by that host's
processes only (its sshd sessions, slurmd's tasks), like a local disk; unmounted afterwards with nothing left.

    with own_disks(bed, bed.hosts, {"workdir": bed.path("own", "work"), "cache": "/root/.cache/kit"}) as disks:
        disks.read(bed.hosts[0], disks.paths["cache"] + "/x")      # the bytes that n1 sees there

The hosts otherwise share this machine's filesystem (a workdir there models NFS), so a test of what differs
between machines (caches, code copied by sync) needs these.
"""

import posixpath
from contextlib import contextmanager
from dataclasses import dataclass

from tests.harness.shell import HarnessError

SIZE = "256m"  # a cap, not an allocation: tmpfs takes memory only for what is written


@dataclass
class OwnDisks:
    hosts: list
    paths: dict[str, str]   # name -> mount point, the same on every host

    def read(self, host, path: str) -> bytes:
        """A file's bytes as `host` sees them."""
        return host.run(["cat", path], text=False).stdout

    def files(self, host, top: str) -> dict[str, bytes]:
        """Every file under `top` as `host` sees it: relative path -> bytes ({} when top does not exist there)."""
        listed = host.run(["sh", "-c", 'cd "$1" 2>/dev/null && find . -type f -print0', "sh", top], text=False,
                          check=False).stdout
        names = sorted(n.decode()[2:] for n in listed.split(b"\0") if n)
        return {name: self.read(host, posixpath.join(top, name)) for name in names}


@contextmanager
def own_disks(bed, hosts, paths: dict[str, str], size=SIZE):
    """A fresh, empty tmpfs at each of `paths` (name -> absolute path) on each of `hosts`; at exit every one is
    unmounted and the directories made for them removed. Raises HarnessError naming what could not be taken down
    (a process still working there): the mount is then detached anyway, so nothing of it stays on the host."""
    mounted, made = [], []
    try:
        for host in hosts:
            for path in paths.values():
                made += [(host, d) for d in _missing_dirs(host, path)]
                host.run(["mkdir", "-p", path])
                host.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", f"kit-disk-{bed.slot.prefix}",
                          path])
                mounted.append((host, path))
        yield OwnDisks(list(hosts), dict(paths))
    finally:
        problems = _take_down(mounted, made)
        if problems:
            raise HarnessError("own disks: " + "; ".join(problems))


def _missing_dirs(host, path):
    """The directories `mkdir -p path` will create on host, deepest first."""
    missing, current = [], path
    while host.run(["test", "-e", current], check=False).returncode != 0:
        missing.append(current)
        current = posixpath.dirname(current)
    return missing


def _take_down(mounted, made) -> list[str]:
    problems = []
    for host, path in reversed(mounted):
        proc = host.run(["umount", path], check=False)
        if proc.returncode != 0:
            problems.append(f"{path} on {host.name} is still in use ({proc.stderr.strip()}); detached lazily")
            host.run(["umount", "-l", path], check=False)
        if path in mount_points(host):
            problems.append(f"{path} is still mounted on {host.name}")
    for host, path in made:   # deepest first: each is empty once the ones below it are gone
        if host.run(["rmdir", path], check=False).returncode != 0:
            problems.append(f"could not remove {path} on {host.name} (not empty?)")
    return problems


def mount_points(host) -> list[str]:
    """The mount points in the host's own mount namespace (as its init sees them)."""
    with open(f"/proc/{host.init_pid}/mountinfo") as f:
        return [line.split()[4] for line in f]


__all__ = ["own_disks", "OwnDisks", "mount_points"]

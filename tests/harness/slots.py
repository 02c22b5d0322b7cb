"""One harness instance = one slot: its subnet, names and ports, owned through a lock file.

Several harnesses can run at once on one machine (the session fixture, the teardown test's own small harness,
another engineer's test run). Each takes a free slot under an flock; a slot whose lock is free but whose names
still exist was left by a killed run, so its leftovers are removed (by name and namespace, never by process name).
"""

import fcntl
import glob
import os
import shutil
import signal
import socket
from dataclasses import dataclass

from tests.harness.shell import HarnessError, sh

FIRST_SLOT, LAST_SLOT = 42, 91
LOCK_DIR = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
TMP_ROOT = "/tmp"


@dataclass
class Slot:
    number: int
    lock_fd: int

    @property
    def prefix(self):
        return f"kit-h{self.number}-"

    @property
    def subnet(self):
        return f"10.200.{self.number}.0/24"

    @property
    def gateway(self):
        """The root namespace's address on the test network (slurmctld, slurmdbd and the test process live here)."""
        return f"10.200.{self.number}.1"

    def host_address(self, i):
        return f"10.200.{self.number}.{10 + i}"

    def host_netns(self, i):
        return f"{self.prefix}n{i}"

    @property
    def bridge_netns(self):
        return f"{self.prefix}br"

    @property
    def root_link(self):
        return f"kith{self.number}"

    def port(self, k):
        """Private TCP ports in the root namespace: 0 slurmctld, 1 slurmd (per host), 2 slurmdbd, 3 mariadb."""
        return 20000 + self.number * 10 + k

    @property
    def tmp_glob(self):
        return os.path.join(TMP_ROOT, f"kit-harness-{self.number}-*")

    @property
    def lock_path(self):
        return os.path.join(LOCK_DIR, f"kit-harness-{self.number}.lock")


def acquire_slot():
    """Lock the first free slot, clear what a dead run left in it, and return it."""
    for number in range(FIRST_SLOT, LAST_SLOT + 1):
        fd = _try_lock(os.path.join(LOCK_DIR, f"kit-harness-{number}.lock"))
        if fd is None:
            continue
        slot = Slot(number, fd)
        remove_leftovers(slot)
        if _slot_is_clear(slot):
            return slot
        release_slot(slot)
    raise HarnessError(f"no free harness slot in {FIRST_SLOT}..{LAST_SLOT}")


def release_slot(slot):
    """Remove the lock file while still holding the lock (takers re-check the inode), then unlock."""
    try:
        os.unlink(slot.lock_path)
    except FileNotFoundError:
        pass
    os.close(slot.lock_fd)


def _try_lock(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    # The holder may have unlinked the file between our open and our lock: then this lock guards nothing.
    try:
        same = os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        same = False
    if not same:
        os.close(fd)
        return _try_lock(path)
    return fd


def remove_leftovers(slot):
    """Delete this slot's namespaces (killing what still runs inside them), link, route and temp dirs."""
    for ns in netns_names(slot.prefix):
        for pid in sh(["ip", "netns", "pids", ns], check=False).split():
            _kill(int(pid))
        sh(["ip", "netns", "del", ns], check=False)
    sh(["ip", "link", "del", slot.root_link], check=False)
    sh(["ip", "route", "del", "unreachable", slot.subnet], check=False)
    for path in glob.glob(slot.tmp_glob):
        shutil.rmtree(path, ignore_errors=True)


def netns_names(prefix):
    """Named network namespaces (ip netns) whose names start with prefix."""
    return [line.split()[0] for line in sh(["ip", "netns", "list"]).splitlines()
            if line.split() and line.split()[0].startswith(prefix)]


def _slot_is_clear(slot):
    """The subnet has no route and our root-namespace ports are free (someone else may use them)."""
    if sh(["ip", "route", "show", "root", slot.subnet]).strip():
        return False
    return all(_port_free(slot.port(k)) for k in (0, 2, 3))


def _port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def reclaim_slot(number):
    """Remove what a killed run left in slot `number`; False when a live harness holds it."""
    fd = _try_lock(os.path.join(LOCK_DIR, f"kit-harness-{number}.lock"))
    if fd is None:
        return False
    slot = Slot(number, fd)
    remove_leftovers(slot)
    release_slot(slot)
    return True

"""N namespace hosts on a private subnet: the base that the SSH and SLURM layers start their daemons on."""

import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, field

from tests.harness import network
from tests.harness.hosts import Host, start_host
from tests.harness.shell import HarnessError
from tests.harness.slots import Slot, acquire_slot, release_slot


@dataclass
class Testbed:
    slot: Slot
    dir: str                       # temp dir holding every file of this harness; removed at teardown
    hosts: list[Host] = field(default_factory=list)
    controller: str = ""           # the root namespace's short hostname (slurmctld and slurmdbd run there)

    @property
    def gateway(self):
        return self.slot.gateway

    @property
    def unused_address(self):
        """An address on the test subnet where no host answers: connecting to it times out (unreachable host).
        Host i is at .(10+i) from i = 1, so .10 is never a host's, whatever their number."""
        return self.slot.host_address(0)

    def host(self, name):
        return next(h for h in self.hosts if h.name == name)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def down(self):
        """Stop every host, delete the network, remove the files, release the slot. Safe to call twice."""
        for host in self.hosts:
            host.stop()
        network.destroy_network(self.slot)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.slot.lock_fd >= 0:
            release_slot(self.slot)
            self.slot.lock_fd = -1


# Host i is at 10.200.<slot>.(10+i) on a /24: .254 is the last address a host can have.
MAX_HOSTS = 244


def bring_up(n_hosts):
    """Hosts n1..nN at 10.200.<slot>.11.. each with its own namespaces, /etc/hosts and hostname.
    Nothing else limits N: one bridge (1,024 ports), one slurmd port and one sshd port shared by every host (each
    listens in its own network namespace), one NodeName line per host in slurm.conf."""
    if not 1 <= n_hosts <= MAX_HOSTS:
        raise HarnessError(f"a testbed has 1 to {MAX_HOSTS} hosts (one /24 subnet per slot), not {n_hosts}")
    slot = acquire_slot()
    bed = Testbed(slot, tempfile.mkdtemp(prefix=f"kit-harness-{slot.number}-"),
                  controller=socket.gethostname().split(".")[0])
    os.chmod(bed.dir, 0o755)  # daemons and job steps of every host read files under it
    try:
        names = [f"n{i}" for i in range(1, n_hosts + 1)]
        hosts_file = _write_hosts_file(bed, names)
        network.create_bridge(slot)
        for i, name in enumerate(names, start=1):
            ns = network.create_host_netns(slot, i)
            host_dir = bed.path("hosts", name)
            os.makedirs(host_dir)
            bed.hosts.append(start_host(name, slot.host_address(i), ns, hosts_file, host_dir))
        network.pin_neighbours(slot, n_hosts)
    except BaseException:
        bed.down()
        raise
    return bed


def _write_hosts_file(bed, names):
    """The /etc/hosts every host sees: itself and its peers by name, and the controller (root namespace)."""
    lines = ["127.0.0.1 localhost", f"{bed.gateway} {bed.controller}"]
    lines += [f"{bed.slot.host_address(i)} {name}" for i, name in enumerate(names, start=1)]
    path = bed.path("etc_hosts")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path

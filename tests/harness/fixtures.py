"""Session-scoped pytest fixtures for the test cluster (registered for all tests by tests/conftest.py).

    testbed        2 namespace hosts n1, n2 (Testbed): no daemons; `testbed.hosts[i].run([...])`
    ssh_hosts      sshd on those hosts (SshHosts): .hosts, .user, .identity_file, .known_hosts, .ssh_config,
                   .connect(host) -> paramiko client; ssh_cluster_config(ssh_hosts, path) writes a kit config
    ssh_own_disks  (per test) the SSH hosts with a disk of their own each (disks.OwnDisks) at .paths["workdir"]
                   (under the testbed dir) and .paths["cache"] (~/.cache/kit, the training module's cache)
    slurm_cluster  SLURM on the same hosts (SlurmCluster): .conf, .env, .nodes, .partition, .run([...]);
                   SLURM_CONF is exported in os.environ while it lives; slurm_cluster_config(...) writes a kit config

Each layer starts only when a test asks for it, once per session; SSH tests do not pay for SLURM. At the end of
the session everything is stopped and checked gone (processes, namespaces, links, routes, mounts, files).
"""

import os

import pytest

from tests.harness.disks import own_disks
from tests.harness.leaks import footprint
from tests.harness.preflight import require
from tests.harness.session import check_clean
from tests.harness.slurm import start_slurm
from tests.harness.ssh import start_ssh
from tests.harness.testbed import bring_up

N_HOSTS = 2


@pytest.fixture(scope="session")
def testbed():
    require()
    bed = bring_up(N_HOSTS)
    yield bed
    fp = footprint(bed)
    bed.down()
    check_clean(fp)


@pytest.fixture(scope="session")
def ssh_hosts(testbed):
    require("ssh")
    ssh = start_ssh(testbed)
    yield ssh
    ssh.stop()


@pytest.fixture
def ssh_own_disks(ssh_hosts):
    bed = ssh_hosts.bed
    paths = {"workdir": bed.path("own", "work"), "cache": os.path.join(os.path.expanduser("~"), ".cache", "kit")}
    with own_disks(bed, bed.hosts, paths) as disks:
        yield disks


@pytest.fixture(scope="session")
def slurm_cluster(testbed):
    require("slurm")
    cluster = start_slurm(testbed)
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = cluster.conf
    yield cluster
    if before is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = before
    cluster.stop()

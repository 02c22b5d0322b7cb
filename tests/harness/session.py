"""Bring a whole harness up and down in one call: for scripts (benchmarks) and the teardown tests.

    with harness(2, ssh=True, slurm=True) as h:
        h.ssh.connect(h.bed.hosts[0]); h.slurm.run(["sinfo"])

Teardown checks that nothing is left (leaks.leftovers) and raises HarnessError naming what remained.
"""

import contextlib
from dataclasses import dataclass
from typing import Optional

from tests.harness.leaks import footprint, leftovers
from tests.harness.shell import HarnessError
from tests.harness.slurm import SlurmCluster, start_slurm
from tests.harness.ssh import SshHosts, start_ssh
from tests.harness.testbed import Testbed, bring_up


@dataclass
class Harness:
    bed: Testbed
    ssh: Optional[SshHosts] = None
    slurm: Optional[SlurmCluster] = None


@contextlib.contextmanager
def harness(n_hosts, ssh=True, slurm=False):
    bed = bring_up(n_hosts)
    h = Harness(bed)
    try:
        h.ssh = start_ssh(bed) if ssh else None
        h.slurm = start_slurm(bed) if slurm else None
        yield h
    finally:
        tear_down(h)


def tear_down(h):
    """Stop the daemons, then the hosts and network; raise if anything of the harness is still there."""
    fp = footprint(h.bed)
    try:
        for layer in (h.slurm, h.ssh):
            if layer is not None:
                layer.stop()
    finally:
        h.bed.down()
    check_clean(fp)


def check_clean(fp):
    left = leftovers(fp)
    if left:
        raise HarnessError("the test cluster left behind:\n  " + "\n  ".join(left))

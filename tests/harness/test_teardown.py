"""A harness of its own (not the session one), taken down: nothing of it may be left on the machine."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.harness.leaks import Footprint, footprint, leftovers
from tests.harness.preflight import require
from tests.harness.session import Harness, tear_down
from tests.harness.shell import wait_until
from tests.harness.slots import reclaim_slot
from tests.harness.slurm import start_slurm
from tests.harness.ssh import start_ssh
from tests.harness.testbed import bring_up

KINDS = ("process", "network namespace", "link", "route", "mount", "file")


@pytest.fixture
def need_all():
    require("ssh", "slurm")


def kinds(found):
    return {k for k in KINDS for item in found if item.startswith(k + " ")}


def test_teardown_leaves_nothing(need_all):
    bed = bring_up(2)
    h = Harness(bed)
    try:
        h.ssh, h.slurm = start_ssh(bed), start_slurm(bed)
        fp = footprint(bed)
        # The check must see every kind of thing the harness creates, or its empty answer below proves nothing.
        assert kinds(leftovers(fp)) == set(KINDS)
        for name in ("sshd", "slurmd", "tini"):
            assert all(any(name in " ".join(p["cmdline"]) for p in host.processes()) for host in bed.hosts)
    finally:
        started = time.monotonic()
        tear_down(h)  # raises HarnessError listing anything left
    assert leftovers(fp) == []
    assert time.monotonic() - started < 10


# Brings a harness up in a child process, prints its footprint, then waits to be killed.
CHILD = """
import sys, time
from tests.harness.testbed import bring_up
from tests.harness.ssh import start_ssh
from tests.harness.slurm import start_slurm
bed = bring_up(2); start_ssh(bed); start_slurm(bed)
print(bed.slot.number, bed.dir, bed.slot.lock_path, *(h.pidns for h in bed.hosts), flush=True)
time.sleep(600)
"""


def test_a_killed_test_run_leaves_no_process_and_its_slot_is_reclaimed(need_all):
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    try:
        number, tmp, lock, *pidns = child.stdout.readline().split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    slot = int(number)
    fp = Footprint(f"kit-h{slot}-", f"10.200.{slot}.0/24", f"kith{slot}", tmp, lock, frozenset(map(int, pidns)))
    # Every daemon dies with its parent (parent-death signal, and the hosts' PID namespaces with their inits)...
    wait_until(lambda: not [x for x in leftovers(fp) if x.startswith("process ")], "the daemons to die", 10)
    # ...but names on the machine outlive a kill -9: the next harness to take the slot removes them.
    assert kinds(leftovers(fp)) >= {"network namespace", "route", "file"}
    assert reclaim_slot(slot)
    assert leftovers(fp) == []

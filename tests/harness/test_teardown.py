"""A harness of its own (not the session one), taken down: nothing of it may be left on the machine."""

import os
import signal
import subprocess
import sys
import time

import pytest

import tests.harness.session as session
from tests.harness.leaks import Footprint, footprint, leftovers
from tests.harness.preflight import require
from tests.harness.session import Harness, harness, tear_down
from tests.harness.shell import HarnessError, wait_until
from tests.harness.slots import Slot, reclaim_slot
from tests.harness.slurm import start_slurm
from tests.harness.ssh import start_ssh
from tests.harness.testbed import bring_up

# These bring the test cluster up themselves, without its fixtures.
pytestmark = pytest.mark.harness

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

# Runs CHILD as a child subreaper and reaps every orphan of it until none is left: the killed child's
# processes are then not reparented to PID 1 (which in some containers never reaps: zombies would pile up).
REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
subprocess.Popen([sys.executable, "-c", sys.argv[1]])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


def test_a_killed_test_run_leaves_no_process_and_its_slot_is_reclaimed(need_all):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    reaper = subprocess.Popen([sys.executable, "-c", REAPER, CHILD], stdout=subprocess.PIPE, text=True, cwd=root)
    children = f"/proc/{reaper.pid}/task/{reaper.pid}/children"
    child = wait_until(lambda: [int(c) for c in open(children).read().split()], "the child test run")[0]
    try:
        number, tmp, lock, *pidns = reaper.stdout.readline().split()
    finally:
        os.kill(child, signal.SIGKILL)
        reaper.wait(20)
    slot = Slot(int(number), lock_fd=-1)
    fp = Footprint(slot.prefix, slot.subnet, slot.root_link, tmp, lock, frozenset(map(int, pidns)))
    # Every daemon dies with its parent (parent-death signal, and the hosts' PID namespaces with their inits)...
    wait_until(lambda: not [x for x in leftovers(fp) if x.startswith("process ")], "the daemons to die", 10)
    # ...but names on the machine outlive a kill -9: the next harness to take the slot removes them.
    assert kinds(leftovers(fp)) >= {"network namespace", "route", "file"}
    assert reclaim_slot(slot.number)
    assert leftovers(fp) == []


def test_a_failed_bring_up_says_why_and_leaves_nothing(need_all, monkeypatch):
    # slurmctld refuses a plugin that does not exist: the error must carry its log, and the half-started
    # cluster (munged, mariadbd, slurmdbd, hosts, network) must be gone afterwards. The footprint is caught on
    # its way to the teardown so that this test checks the machine itself, not the harness's own verdict.
    seen = {}
    real_footprint = session.footprint
    monkeypatch.setattr(session, "footprint", lambda bed: seen.setdefault("fp", real_footprint(bed)))
    monkeypatch.setattr(session, "start_slurm", lambda bed: start_slurm(bed, {"SelectType": "select/nosuch"}))
    with pytest.raises(HarnessError, match=r"slurmctld(.|\n)*select/nosuch"):
        with harness(1, ssh=False, slurm=True):
            pass
    assert leftovers(seen["fp"]) == []

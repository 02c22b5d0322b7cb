"""Disks of their own: what one host writes there no other host (nor this machine) sees, and taking them down
leaves every host as it was, also when a process still works on one."""

import os
import subprocess

import pytest

from tests.harness.disks import mount_points, own_disks
from tests.harness.shell import HarnessError, wait_until


def test_each_host_sees_only_its_own_disk_and_nothing_is_left(testbed):
    n1, n2 = testbed.hosts[:2]
    shared = testbed.path("own-probe", "deep")   # under the testbed dir: this machine's (shared) filesystem
    home = os.path.join(os.path.expanduser("~"), f".kit-own-disk-probe-{os.getpid()}")   # each host's overlay
    with own_disks(testbed, testbed.hosts, {"shared": shared, "home": home}) as disks:
        for path in (shared, home):
            n1.run(["sh", "-c", "echo n1 > f"], cwd=path)   # a cwd on the disk is the host's disk too
            n2.run(["sh", "-c", f'echo n2 > "{path}/f"; mkdir "{path}/sub"; echo x > "{path}/sub/g"'])
            assert disks.read(n1, f"{path}/f") == b"n1\n" and disks.read(n2, f"{path}/f") == b"n2\n"
            assert disks.files(n1, path) == {"f": b"n1\n"}
            assert disks.files(n2, path) == {"f": b"n2\n", "sub/g": b"x\n"}
            assert not os.path.exists(f"{path}/f")   # this machine sees none of it
            assert path in mount_points(n1) and path in mount_points(n2)
    for host in (n1, n2):
        assert shared not in mount_points(host) and home not in mount_points(host)
        assert host.run(["test", "-e", home], check=False).returncode == 1
    assert not os.path.exists(testbed.path("own-probe")) and not os.path.exists(home)


def test_a_disk_still_in_use_is_named_and_detached_anyway(testbed):
    n1 = testbed.hosts[0]
    path = testbed.path("own-busy")
    busy = None
    with pytest.raises(HarnessError, match=r"own disks: .*own-busy on n1 is still in use"):
        with own_disks(testbed, [n1], {"busy": path}):
            busy = n1.popen(["sleep", "60"], cwd=path, stdout=subprocess.DEVNULL)
            wait_until(lambda: any(p["cmdline"][:2] == ["sleep", "60"] for p in n1.processes()), "the sleeper")
    try:
        assert path not in mount_points(n1)
    finally:
        for p in n1.processes():
            if p["cmdline"][:2] == ["sleep", "60"]:
                os.kill(p["pid"], 9)
        busy.wait(5)

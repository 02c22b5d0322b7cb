"""Host helpers: commands run inside the host's namespaces; process listings stay within one host."""

import os
import socket
import subprocess
import time

import pytest

from tests.harness.shell import wait_until


def test_run_enters_the_hosts_namespaces(testbed, tmp_path):
    host = testbed.hosts[0]
    out = host.run(["sh", "-c", "hostname; pwd; cat /etc/hosts; stat -L -c %i /proc/self/ns/pid"],
                   cwd=str(tmp_path)).stdout.splitlines()
    assert out[:2] == [host.name, str(tmp_path)]
    assert f"{testbed.hosts[1].address} {testbed.hosts[1].name}" in out
    # The command ran in the host's own PID namespace, not the machine's (its pids count from the host's init,
    # but how far depends on what earlier tests of the session started there).
    assert int(out[-1]) == host.pidns != os.stat("/proc/self/ns/pid").st_ino


def test_processes_of_one_host_are_not_seen_on_another(testbed):
    n1, n2 = testbed.hosts[:2]
    marker = f"kit-harness-probe-{os.getpid()}"
    proc = n1.popen(["bash", "-c", f"exec -a {marker} sleep 60"], stdout=subprocess.DEVNULL)
    found = wait_until(lambda: [p for p in n1.processes() if p["cmdline"][:1] == [marker]], "the probe")
    try:
        assert found[0]["nspid"] != found[0]["pid"]
        assert not [p for p in n2.processes() if p["cmdline"][:1] == [marker]]
        # Inside n2, the process does not exist at all.
        ps = n2.run(["ps", "-e", "-o", "args="]).stdout
        assert marker not in ps and marker in n1.run(["ps", "-e", "-o", "args="]).stdout
    finally:
        os.kill(found[0]["pid"], 9)
        proc.wait(5)


def test_unused_address_is_an_unreachable_host(testbed):
    # What "host down" looks like to a backend: no answer, then EHOSTUNREACH once ARP gives up (~2-3 s).
    started = time.monotonic()
    with pytest.raises(OSError):
        socket.create_connection((testbed.unused_address, 22), timeout=5)
    assert time.monotonic() - started < 5


def test_each_host_writes_its_own_home(testbed):
    # Logins' rc files write into $HOME (pyenv's rehash lock, caches): each host keeps those writes to itself.
    n1, n2 = testbed.hosts[:2]
    home = os.path.expanduser("~")
    name = f".kit-harness-home-probe-{os.getpid()}"
    n1.run(["sh", "-c", f'echo n1 > "{home}/{name}"'])
    try:
        assert n1.run(["cat", f"{home}/{name}"]).stdout == "n1\n"
        assert n2.run(["test", "-e", f"{home}/{name}"], check=False).returncode == 1
        assert not os.path.exists(os.path.join(home, name))
        # What is in the home directory here is there on the host too (the overlay's lower layer).
        assert set(n2.run(["ls", "-A", home]).stdout.split()) == set(os.listdir(home))
    finally:
        n1.run(["rm", "-f", f"{home}/{name}"])


def test_a_testbed_of_more_hosts_than_its_subnet_holds_is_refused_before_anything_starts():
    from tests.harness.shell import HarnessError
    from tests.harness.testbed import MAX_HOSTS, bring_up
    before = sorted(os.listdir("/tmp"))
    for n in (0, MAX_HOSTS + 1):
        with pytest.raises(HarnessError, match=f"1 to {MAX_HOSTS} hosts"):
            bring_up(n)
    assert not [p for p in set(os.listdir("/tmp")) - set(before) if p.startswith("kit-harness-")]

"""A host whose sshd offers no SFTP (a hardened config): `kit submit` refuses before anything starts, with one line
naming the host, the cause and the fix, and `kit doctor` shows it as the failing check."""

import json
import os

import pytest

from launcher.transport.sftp import REFUSED
from tests.backends.sshrun import cluster, leftovers, workdir
from tests.harness.ssh import variant_sshd
from tests.launcher.localrun import kit, write_job

PORT = 2223


@pytest.fixture(scope="module")
def no_sftp(ssh_hosts):
    n1 = ssh_hosts.hosts[0]
    with variant_sshd(ssh_hosts, n1, PORT, "") as known_hosts:
        yield known_hosts


def _cluster(ssh_hosts, tmp_path, known_hosts):
    return cluster(ssh_hosts, tmp_path, hosts=[{"name": "n1", "address": ssh_hosts.hosts[0].address}],
                   ssh_options={"port": PORT, "known_hosts": known_hosts})


def test_submit_to_a_host_without_sftp_starts_nothing_and_says_why(ssh_hosts, no_sftp, tmp_path):
    # Two processes: their accelerate config is a file to upload (a one-process node has none, and needs no SFTP).
    job = write_job(tmp_path, nodes=1, procs=2, args=["--out", str(tmp_path), "--linger", "1"])
    result = kit("submit", job, "--cluster", _cluster(ssh_hosts, tmp_path, no_sftp), "--run-id", "ssh-no-sftp",
                 cwd=workdir(ssh_hosts), timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"kit: error: host n1: cannot upload the run's files: {REFUSED}"
    assert not (tmp_path / "rank0.json").exists()
    assert leftovers(ssh_hosts, "ssh-no-sftp") == {}
    assert not os.path.exists(f"{workdir(ssh_hosts)}/runs/ssh-no-sftp")


def test_doctor_shows_the_missing_sftp(ssh_hosts, no_sftp, tmp_path):
    result = kit("doctor", "--cluster", _cluster(ssh_hosts, tmp_path, no_sftp), "--format", "json",
                 cwd=workdir(ssh_hosts), timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    checks = {c["check"]: c for c in json.loads(result.stdout)["checks"] if c["host"] == "n1"}
    assert checks["sftp"]["verdict"] == "FAIL" and checks["sftp"]["detail"] == REFUSED
    assert [name for name, c in checks.items() if c["verdict"] == "FAIL"] == ["sftp"]

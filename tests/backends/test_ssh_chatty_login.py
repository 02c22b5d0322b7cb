"""A host whose logins print text without a newline (an rc file's `printf` of a banner or a terminal title):
kit's checks read their marked lines wherever a line starts, so `kit submit` runs and `kit doctor` passes there,
with no setup line of kit's config to absorb the text. The text comes from a second sshd on n1 that sets
BASH_ENV, which every non-interactive bash of the login reads (launcher/preflight/entrypoint.py)."""

import json

import pytest

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.harness.ssh import variant_sshd
from tests.launcher.localrun import kit, reports, write_job

PORT = 2224


@pytest.fixture(scope="module")
def chatty(ssh_hosts, tmp_path_factory):
    banner = tmp_path_factory.mktemp("chatty") / "banner.sh"
    banner.write_text("printf 'Welcome to n1 '\n")
    with variant_sshd(ssh_hosts, ssh_hosts.hosts[0], PORT, extra=f"SetEnv BASH_ENV={banner}\n") as known_hosts:
        yield known_hosts


def _cluster(ssh_hosts, tmp_path, known_hosts):
    return cluster(ssh_hosts, tmp_path, hosts=[{"name": "n1", "address": ssh_hosts.hosts[0].address}],
                   ssh_options={"port": PORT, "known_hosts": known_hosts}, setup=[])


def test_submit_runs_on_a_host_whose_login_prints(ssh_hosts, chatty, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=1, args=["--out", str(out)])
    result = kit("submit", job, "--cluster", _cluster(ssh_hosts, tmp_path, chatty), "--run-id", "ssh-chatty",
                 cwd=workdir(ssh_hosts), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Welcome to n1" in result.stdout   # the text is there, and did not hide the checks' lines
    assert [r["rank"] for r in reports(out)] == [0]
    assert leftovers(ssh_hosts, "ssh-chatty") == {}


def test_doctor_passes_on_a_host_whose_login_prints(ssh_hosts, chatty, tmp_path):
    job = write_job(tmp_path, nodes=1, args=["--out", str(tmp_path)])
    result = kit("doctor", "--cluster", _cluster(ssh_hosts, tmp_path, chatty), "--job", job, "--format", "json",
                 cwd=workdir(ssh_hosts), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    checks = {c["check"]: c["verdict"] for c in json.loads(result.stdout)["checks"]}
    assert checks["python"] == checks["entrypoint"] == checks["master port"] == checks["tcp to master"] == "ok"

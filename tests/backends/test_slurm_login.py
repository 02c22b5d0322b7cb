"""Submitting from elsewhere: `slurm.login_host` runs every SLURM command on that host over SSH and reaches the
workdir over SFTP; the run record stays where kit runs. kit itself runs here with a SLURM_CONF that points
nowhere, so a SLURM command that ran on this machine would fail: what works went through the login host."""

import json
import os
import re
import sys

import pytest
import yaml

from launcher.transport.where import LoginHost
from launcher.transport.endpoint import resolve
from tests.backends.slurmrun import probe_processes, queue, wait_for, workdir, write_job
from tests.harness.configs import slurm_cluster_config
from tests.launcher.localrun import kit as _kit
from tests.launcher.localrun import reports

SECRET = "s3cr3t-login-value"


def _ssh(ssh_hosts, **extra) -> dict:
    return {"user": ssh_hosts.user, "identity_file": ssh_hosts.identity_file, "known_hosts": ssh_hosts.known_hosts,
            "config_file": ssh_hosts.ssh_config, "connect_timeout": 5.0, **extra}


def _cluster(slurm_cluster, ssh_hosts, tmp_path, **ssh_extra) -> str:
    slurm = {"partition": slurm_cluster.partition, "login_host": ssh_hosts.hosts[0].name}
    return slurm_cluster_config(slurm_cluster, tmp_path / "login.yaml", python=sys.executable, slurm=slurm,
                                ssh=_ssh(ssh_hosts, **ssh_extra))


def kit(*argv, cwd, timeout=180):
    env = {**os.environ, "SLURM_CONF": "/nonexistent/slurm.conf", "LOGIN_TEST_TOKEN": SECRET}
    return _kit(*argv, cwd=cwd, env=env, timeout=timeout)


def _here(tmp_path) -> str:
    here = tmp_path / "submitter"
    here.mkdir()
    return str(here)


def test_a_two_node_job_through_the_login_host_is_followed_to_its_exit_code(slurm_cluster, ssh_hosts, tmp_path):
    script = tmp_path / "exit3.py"
    script.write_text("import os, socket, sys\n"
                      "ok = os.environ.get('LOGIN_TEST_TOKEN') == " + repr(SECRET) + "\n"
                      "print('rank', os.environ['RANK'], 'on', socket.gethostname(), 'secret', ok, flush=True)\n"
                      "sys.exit(3)\n")
    job = write_job(tmp_path, name="exit3", nodes=2, entrypoint={"script": str(script)},
                    secret_env=["LOGIN_TEST_TOKEN"])
    here = _here(tmp_path)
    r = kit("submit", job, "--cluster", _cluster(slurm_cluster, ssh_hosts, tmp_path), "--gpus", "0",
            "--run-id", "login-exit3", cwd=here)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "via login host n1" in r.stderr and "running on n[1-2]" in r.stderr, r.stderr
    # Tagged [nodeN] or [nodeN/rankR]; a node still running when the other failed may be stopped first.
    assert re.search(r"^\[node0(/rank0)?\] rank 0 on n1 secret True$", r.stdout, re.M) or \
        re.search(r"^\[node1(/rank1)?\] rank 1 on n2 secret True$", r.stdout, re.M), r.stdout
    assert "kit: run login-exit3 failed: node" in r.stderr and "exited 3" in r.stderr, r.stderr
    # The record is here; the plan's files and the job's own output are in the cluster's workdir.
    record = os.path.join(here, "runs", "login-exit3")
    st = json.load(open(os.path.join(record, "status.json")))
    # Each node's code as its command wrote it (torchrun's 1, or 143 for the node stopped), the rank's own 3.
    assert st["state"] == "failed" and st["exit_code"] == 3 and None not in st["node_exit_codes"], st
    assert st["handle"]["login_host"] == "n1" and sorted(n["host"] for n in st["nodes"]) == ["n1", "n2"]
    remote = os.path.join(workdir(slurm_cluster), "runs", "login-exit3")
    assert os.path.isfile(os.path.join(remote, "job.sbatch")) and not os.path.exists(os.path.join(remote,
                                                                                                   "status.json"))
    for name in os.listdir(record) + [os.path.join(remote, n) for n in os.listdir(remote)]:
        path = os.path.join(record, name)
        if os.path.isfile(path):
            assert SECRET not in open(path, errors="replace").read(), path
    s = kit("status", "login-exit3", cwd=here)
    assert "state failed" in s.stdout and "exit code 3" in s.stdout, s.stdout
    # From any other directory, through kit's index of the user's runs; with the SLURM job's id.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    s = kit("status", "login-exit3", cwd=elsewhere)
    assert f"backend slurm  slurm job {st['handle']['job_id']}  state failed" in s.stdout, s.stdout
    listed = kit("runs", "--backend", "slurm", "--state", "failed", cwd=elsewhere).stdout
    assert re.search(r"^login-exit3 +slurm +failed +3 ", listed, re.M), listed
    logs = kit("logs", "login-exit3", "--node", "1", cwd=here)
    assert "node1" in logs.stdout and "node0" not in logs.stdout, logs.stdout
    assert open(os.path.join(record, "node1.log")).read() == open(os.path.join(remote, "node1.log")).read()


def test_status_logs_and_cancel_of_a_detached_job_through_the_login_host(slurm_cluster, ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    # The login shell's environment has no PYTHONUNBUFFERED (this machine's has): without it torchrun's agent
    # holds the ranks' tee'd stdout lines in its buffer while the node log is a file.
    job = write_job(tmp_path, nodes=2, args=["--out", str(out), "--linger", "300"], env={"PYTHONUNBUFFERED": "1"})
    here = _here(tmp_path)
    r = kit("submit", job, "--cluster", _cluster(slurm_cluster, ssh_hosts, tmp_path), "--gpus", "0",
            "--run-id", "login-cancel", "--detach", cwd=here, timeout=60)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: len(reports(out)) == 2, timeout=90)
    s = kit("status", "login-cancel", cwd=here)
    assert "state running" in s.stdout and "on n[1-2]" in s.stdout, s.stdout
    # The node logs are on the cluster's workdir; kit logs reads them back over SFTP into the record.
    said = []

    def node1_ready():
        said.append(kit("logs", "login-cancel", "--node", "1", cwd=here).stdout)
        return "probe rank 1/2 ready" in said[-1]
    assert wait_for(node1_ready, timeout=60), said[-1]
    assert os.path.isfile(os.path.join(here, "runs", "login-cancel", "node1.log"))
    c = kit("cancel", "login-cancel", cwd=here, timeout=150)
    assert c.returncode == 0 and "cancelled" in c.stdout, c.stdout + c.stderr
    assert wait_for(lambda: not probe_processes(slurm_cluster, "login-cancel"), timeout=15), \
        probe_processes(slurm_cluster, "login-cancel")
    assert queue(slurm_cluster) == []
    s = kit("status", "login-cancel", cwd=here)
    assert "state cancelled" in s.stdout, s.stdout


def test_an_unreachable_login_host_fails_before_submission_in_one_line(slurm_cluster, ssh_hosts, tmp_path):
    job = write_job(tmp_path, nodes=2, args=["--out", str(tmp_path)])
    here = _here(tmp_path)
    # Port 2: nothing listens there, so the connection is refused at once.
    r = kit("submit", job, "--cluster", _cluster(slurm_cluster, ssh_hosts, tmp_path, port=2), "--gpus", "0",
            "--run-id", "login-down", cwd=here, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kit: error: slurm.login_host: host n1 "), r.stderr
    assert "cannot connect" in lines[0]
    assert not os.path.exists(os.path.join(here, "runs")) and queue(slurm_cluster) == []


def test_preflight_and_doctor_run_on_the_login_host(slurm_cluster, ssh_hosts, tmp_path):
    job = write_job(tmp_path, nodes=3, args=["--out", str(tmp_path)])
    cluster = _cluster(slurm_cluster, ssh_hosts, tmp_path)
    here = _here(tmp_path)
    r = kit("submit", job, "--cluster", cluster, "--gpus", "0", "--run-id", "login-3", cwd=here, timeout=60)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "kit: error: --nodes 3: partition debug has 2 node(s) (n[1-2]); ask for at most 2"], r.stderr
    d = kit("doctor", "--cluster", cluster, "--job", write_job(tmp_path, name="two", nodes=2), cwd=here, timeout=60)
    assert d.returncode == 0, d.stdout + d.stderr
    rows = {line.split()[1] + " " + line.split()[2]: line for line in d.stdout.splitlines()[1:-1]}
    assert "PASS" in rows["login host"] and "login host n1" in rows["login host"], d.stdout
    assert all("PASS" in line for line in rows.values()), d.stdout


def test_secrets_reach_the_command_on_the_channel_never_a_command_line(ssh_hosts):
    """The command prints every ancestor's command line up to sshd, then the variable it was given."""
    settings = {**_ssh(ssh_hosts), "port_given": False}
    host = LoginHost(resolve(ssh_hosts.hosts[0].name, None, settings))
    walk = ('p=$$; while [ "$p" -gt 1 ]; do tr "\\0" " " < /proc/$p/cmdline; echo; '
            'p=$(sed -n "s/^PPid:\\t//p" /proc/$p/status); done; echo "value=$X_TOKEN"')
    r = host.run(["bash", "-c", walk], env={"X_TOKEN": SECRET + " with 'quotes' and $(dollars)"})
    lines = r.out.splitlines()
    assert r.code == 0 and lines[-1] == f"value={SECRET} with 'quotes' and $(dollars)", r.out + r.err
    assert any("sshd" in line for line in lines[:-1]), lines      # the walk reached sshd
    assert not any(SECRET in line for line in lines[:-1]), lines


@pytest.mark.parametrize("fields,message", [
    ({"slurm": {"login_hots": "n1"}}, "unknown key 'slurm.login_hots'"),
    ({"slurm": {"login_host": "n1; rm -rf /"}}, "slurm.login_host"),
    ({"ssh": {"user": "me"}}, "ssh: section given but slurm.login_host is not set"),
])
def test_login_host_settings_are_checked_strictly(tmp_path, fields, message):
    config = {"name": "c", "backend": "slurm", "workdir": "/tmp", "slurm": {"partition": "debug"}, **fields}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    job = write_job(tmp_path, nodes=2)
    r = _kit("submit", job, "--cluster", str(path), "--dry-run", cwd=str(tmp_path), timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert message in r.stderr, r.stderr

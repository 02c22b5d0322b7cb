"""The SSH hosts are real: separate hostnames, PID namespaces and addresses, host keys checked, keys only."""

import io
import os
import subprocess

import paramiko
import pytest

from launcher.spec import load_cluster
from tests.harness.configs import ssh_cluster_config


def remote(ssh_hosts, host, command):
    client = ssh_hosts.connect(host)
    try:
        _, out, err = client.exec_command(command, timeout=20)
        status = out.channel.recv_exit_status()
        return status, out.read().decode(), err.read().decode()
    finally:
        client.close()


def test_each_host_has_its_own_name_and_pid_namespace(ssh_hosts):
    seen = {}
    for host in ssh_hosts.hosts:
        status, out, _ = remote(ssh_hosts, host, "hostname; stat -L -c %i /proc/self/ns/pid")
        name, pidns = out.split()
        assert status == 0 and name == host.name
        assert int(pidns) == host.pidns
        seen[name] = int(pidns)
    assert len(set(seen.values())) == len(ssh_hosts.hosts)
    assert os.stat("/proc/self/ns/pid").st_ino not in seen.values()


def test_hosts_resolve_and_reach_each_other_but_nothing_else(ssh_hosts):
    n1, n2 = ssh_hosts.hosts[:2]
    status, out, err = remote(ssh_hosts, n1, f"getent hosts {n2.name}; ip route; "
                                             f"exec 3<>/dev/tcp/{n2.name}/22 && head -c 7 <&3")
    assert status == 0, err
    assert f"{n2.address} " in out and "SSH-2.0" in out
    assert "default" not in out  # no way out of the test network


def test_unknown_host_key_is_refused(ssh_hosts, tmp_path):
    host = ssh_hosts.hosts[0]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    client = paramiko.SSHClient()
    client.load_host_keys(str(empty))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        client.connect(host.address, username="root", key_filename=ssh_hosts.identity_file,
                       allow_agent=False, look_for_keys=False, timeout=10)
    client.close()


def test_a_changed_host_key_is_refused(ssh_hosts, tmp_path):
    n1, n2 = ssh_hosts.hosts[:2]
    # known_hosts that gives n1's address the key of n2: what a replaced or spoofed machine looks like.
    key_of_n2 = open(os.path.join(n2.dir, "ssh_host_ed25519_key.pub")).read().split()[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{n1.address} {' '.join(key_of_n2)}\n")
    client = paramiko.SSHClient()
    client.load_host_keys(str(wrong))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    with pytest.raises(paramiko.BadHostKeyException):
        client.connect(n1.address, username="root", key_filename=ssh_hosts.identity_file,
                       allow_agent=False, look_for_keys=False, timeout=10)
    client.close()


def test_openssh_client_config_reaches_each_host(ssh_hosts):
    # pdsh and plain `ssh` use the same file (bench/ssh_fanout.py).
    for host in ssh_hosts.hosts:
        proc = subprocess.run(["ssh", "-F", ssh_hosts.ssh_config, host.name, "hostname"],
                              capture_output=True, text=True, timeout=30)
        assert (proc.returncode, proc.stdout.strip()) == (0, host.name), proc.stderr


def test_sftp_delivers_files_that_the_host_sees(ssh_hosts, tmp_path):
    host = ssh_hosts.hosts[1]
    client = ssh_hosts.connect(host)
    try:
        with client.open_sftp() as sftp:
            sftp.putfo(io.BytesIO(b"num_machines: 2\n"), str(tmp_path / "node1.yaml"))
    finally:
        client.close()
    assert host.run(["cat", str(tmp_path / "node1.yaml")]).stdout == "num_machines: 2\n"


def test_password_login_is_not_offered(ssh_hosts):
    transport = paramiko.Transport((ssh_hosts.hosts[0].address, 22))
    try:
        transport.start_client(timeout=10)
        with pytest.raises(paramiko.BadAuthenticationType) as info:
            transport.auth_password("root", "guess")
        assert info.value.allowed_types == ["publickey"]
    finally:
        transport.close()


def test_kit_ssh_cluster_config_loads(ssh_hosts, tmp_path):
    spec = load_cluster(ssh_cluster_config(ssh_hosts, tmp_path / "cluster.yaml"))
    assert [(h.name, h.address) for h in spec.hosts] == [(h.name, h.address) for h in ssh_hosts.hosts]
    assert spec.ssh.user == "root" and spec.ssh.known_hosts == ssh_hosts.known_hosts
    assert os.path.isdir(spec.workdir)

"""Starting SFTP on real sshd hosts whose sftp differs from the harness's: refused, text before its first packet,
a command that fails. Each says why in a user's terms (launcher/transport/sftp.py), and the connection stays
usable."""

import paramiko
import pytest

from launcher.transport.sftp import ENDED, REFUSED, TEXT_FIRST, SftpUnavailable, start_sftp
from tests.harness.ssh import variant_sshd

PORT = 2222


def _client(ssh_hosts, host, port, known_hosts):
    client = paramiko.SSHClient()
    client.load_host_keys(known_hosts)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(host.address, port=port, username=ssh_hosts.user, key_filename=ssh_hosts.identity_file,
                   allow_agent=False, look_for_keys=False, timeout=10)
    return client


@pytest.mark.parametrize("subsystem, expected", [
    ("", REFUSED),                                   # a hardened sshd_config without the sftp line
    ('echo "Welcome to the cluster"', TEXT_FIRST),   # what an echo in ~/.bashrc does to sftp-server's stream
    ("/no/such/sftp-server", ENDED),                 # a Subsystem line naming a program the host lacks
], ids=["no-subsystem", "text-first", "missing-program"])
def test_an_sftp_that_cannot_start_says_why(ssh_hosts, subsystem, expected):
    n1 = ssh_hosts.hosts[0]
    with variant_sshd(ssh_hosts, n1, PORT, subsystem) as known_hosts:
        client = _client(ssh_hosts, n1, PORT, known_hosts)
        try:
            with pytest.raises(SftpUnavailable) as caught:
                start_sftp(client.get_transport(), 10)
            assert str(caught.value) == expected
            _, out, _ = client.exec_command("echo still-here")
            assert out.read() == b"still-here\n"
        finally:
            client.close()


def test_the_harness_sftp_starts(ssh_hosts, tmp_path):
    client = ssh_hosts.connect(ssh_hosts.hosts[0])
    try:
        sftp = start_sftp(client.get_transport(), 10)
        (tmp_path / "seen").write_text("x")
        assert "seen" in sftp.listdir(str(tmp_path))
    finally:
        client.close()

"""The paramiko transport against the real sshd hosts: parallel connects, host keys refused, timeouts bounded,
encrypted keys through the agent."""

import os
import subprocess
import time

import pytest

from launcher.errors import KitError
from launcher.transport.endpoint import resolve
from launcher.transport.hostkeys import Accepted
from launcher.transport.connect import connect, connect_all


def _settings(ssh_hosts, **extra):
    return {"user": ssh_hosts.user, "identity_file": ssh_hosts.identity_file, "known_hosts": ssh_hosts.known_hosts,
            "connect_timeout": 5.0, "config_file": os.devnull, **extra}


def test_connect_all_runs_put_and_session(ssh_hosts, tmp_path):
    endpoints = [resolve(h.name, h.address, _settings(ssh_hosts)) for h in ssh_hosts.hosts]
    conns = connect_all(endpoints, Accepted())
    try:
        for host in ssh_hosts.hosts:
            code, out, _ = conns[host.name].run("hostname")
            assert (code, out.strip()) == (0, host.name)
        conns["n2"].put(str(tmp_path / "a" / "b.txt"), "hello\n", mode=0o600)
        assert ssh_hosts.hosts[1].run(["cat", str(tmp_path / "a" / "b.txt")]).stdout == "hello\n"
        assert oct(os.stat(tmp_path / "a" / "b.txt").st_mode & 0o777) == "0o600"
    finally:
        for c in conns.values():
            c.close()


def test_close_and_wait_leaves_no_ssh_thread_for_a_fork(ssh_hosts):
    # kit forks after SSH work (a detached supervisor, a sweep's trials). A paramiko thread inside OpenSSL at the
    # fork would leave OpenSSL's lock held in the child, whose first handshake then hangs for good: a sweep's
    # trials were seen stuck that way. So kit closes and waits for the threads first; the child logs in anew.
    from launcher.transport.ssh import close_and_wait
    endpoints = [resolve(h.name, h.address, _settings(ssh_hosts)) for h in ssh_hosts.hosts]
    conns = connect_all(endpoints, Accepted())
    for c in conns.values():
        c.session("sleep 30")   # a channel open and busy, as a waiting launch gate is
    ours = [c.client.get_transport() for c in conns.values()]
    assert all(t.is_alive() for t in ours)
    close_and_wait(list(conns.values()))   # also waits for any other closed one still ending (an earlier test's)
    assert [t for t in ours if t.is_alive()] == []
    child = os.fork()
    if child == 0:
        code = 1
        try:
            again = connect(endpoints[0], Accepted())
            code = 0 if again.run("hostname")[1].strip() == ssh_hosts.hosts[0].name else 1
            again.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_connection_socket_sends_and_acknowledges_at_once(ssh_hosts):
    # SSH waits on many small replies: without TCP_NODELAY (ours) and quick ACKs (so sshd's back-to-back writes
    # are not held by its Nagle), each could wait ~40 ms; on the test hosts a login went 65 -> 18 ms and the
    # first channel open 45 -> 1 ms.
    import socket
    host = ssh_hosts.hosts[0]
    conn = connect(resolve(host.name, host.address, _settings(ssh_hosts)), Accepted())
    try:
        sock = conn.client.get_transport().sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert type(sock).__name__ == "_QuickAckSocket"
        assert conn.run("hostname")[1].strip() == host.name
    finally:
        conn.close()


def test_openssh_config_gives_hostname_user_and_key(ssh_hosts):
    # The harness's client config maps n1 -> its address, root, the identity file; kit reads the same file.
    ep = resolve("n1", None, {"config_file": ssh_hosts.ssh_config, "known_hosts": ssh_hosts.known_hosts})
    assert (ep.hostname, ep.user, ep.identity_files) == (ssh_hosts.hosts[0].address, "root",
                                                         (ssh_hosts.identity_file,))
    conn = connect(ep, Accepted())
    assert conn.run("hostname")[1].strip() == "n1"
    conn.close()


def test_unknown_host_key_is_refused_naming_the_host(ssh_hosts, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = ssh_hosts.hosts[0]
    with pytest.raises(KitError, match=r"host n1 .*host key unknown.*ssh-keyscan"):
        connect(resolve(host.name, host.address, _settings(ssh_hosts, known_hosts=str(empty))), Accepted())


def test_new_key_accepted_only_on_opt_in_and_recorded(ssh_hosts, tmp_path, capsys):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = ssh_hosts.hosts[0]
    accepted = Accepted()
    ep = resolve(host.name, host.address, _settings(ssh_hosts, known_hosts=str(empty), accept_new_host_keys=True))
    connect(ep, accepted).close()
    assert accepted.keys[0]["host"] == "n1" and accepted.keys[0]["fingerprint"].startswith("SHA256:")
    assert "accepted the NEW host key of host n1" in capsys.readouterr().err


def test_changed_host_key_is_refused(ssh_hosts, tmp_path):
    n1, n2 = ssh_hosts.hosts[:2]
    key_of_n2 = open(os.path.join(n2.dir, "ssh_host_ed25519_key.pub")).read().split()[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{n1.address} {' '.join(key_of_n2)}\n")
    with pytest.raises(KitError, match=r"host n1 .*CHANGED.*ssh-keygen -R"):
        connect(resolve(n1.name, n1.address, _settings(ssh_hosts, known_hosts=str(wrong))), Accepted())


def test_unreachable_host_fails_within_the_timeout(ssh_hosts):
    ep = resolve("ghost", ssh_hosts.bed.unused_address, _settings(ssh_hosts, connect_timeout=2.0))
    good = resolve("n1", ssh_hosts.hosts[0].address, _settings(ssh_hosts))
    started = time.monotonic()
    with pytest.raises(KitError, match=r"^host ghost \(") as info:
        connect_all([good, ep], Accepted())
    assert time.monotonic() - started < 4.5
    assert "n1" not in str(info.value)


def test_proxyjump_from_the_openssh_config(ssh_hosts, tmp_path):
    # n2 reached through n1, as `ssh -J` would: the jump's host key is checked the same way.
    config = tmp_path / "config"
    config.write_text("Host n2\n  ProxyJump n1\n" + open(ssh_hosts.ssh_config).read())
    ep = resolve("n2", None, {"config_file": str(config), "known_hosts": ssh_hosts.known_hosts})
    assert ep.proxy_jump == "n1"
    conn = connect(ep, Accepted())
    try:
        assert conn.run("hostname")[1].strip() == "n2"
        # sshd on n2 saw the connection come from n1's address, not from this machine.
        assert conn.run("echo $SSH_CLIENT")[1].split()[0] == ssh_hosts.hosts[0].address
    finally:
        conn.close()


def test_the_configs_user_known_hosts_file_is_where_keys_are_checked(ssh_hosts, tmp_path, monkeypatch):
    # As `ssh -F config` does: the config's UserKnownHostsFile, not ~/.ssh/known_hosts (empty here), vouches for
    # the hosts.
    monkeypatch.setenv("HOME", str(tmp_path))
    ep = resolve("n1", None, {"config_file": ssh_hosts.ssh_config})
    assert ep.known_hosts == (ssh_hosts.known_hosts,)
    conn = connect(ep, Accepted())
    try:
        assert conn.run("hostname")[1].strip() == "n1"
    finally:
        conn.close()
    # Without it, the same host is refused as unknown, naming the file looked in.
    bare = tmp_path / "bare_config"
    bare.write_text("".join(line for line in open(ssh_hosts.ssh_config) if "UserKnownHostsFile" not in line))
    with pytest.raises(KitError, match=r"host key unknown"):
        connect(resolve("n1", None, {"config_file": str(bare)}), Accepted())


PASSPHRASE = "kit-test-passphrase"


def _encrypted_key(tmp_path):
    key = tmp_path / "enc_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-f", str(key)], check=True)
    return key


def test_an_encrypted_key_without_an_agent_says_so(ssh_hosts, tmp_path, monkeypatch):
    # paramiko's own words would be "authentication failed": the cause is the passphrase kit never asks for.
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    key = _encrypted_key(tmp_path)
    n1 = ssh_hosts.hosts[0]
    with pytest.raises(KitError, match=rf"^host n1 \(.*\): {key} is encrypted and no ssh-agent offered a key "
                                       r"that works; add it to your agent first \(`ssh-add KEY`\)"):
        connect(resolve(n1.name, n1.address, _settings(ssh_hosts, identity_file=str(key))), Accepted())


def test_an_encrypted_key_held_by_the_agent_logs_in(ssh_hosts, tmp_path, monkeypatch):
    key = _encrypted_key(tmp_path)
    authorized = os.path.join(ssh_hosts.bed.path("ssh"), "authorized_keys")
    original = open(authorized).read()
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        with open(authorized, "a") as f:
            f.write(open(f"{key}.pub").read())
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        askpass = tmp_path / "askpass"
        askpass.write_text(f"#!/bin/sh\necho {PASSPHRASE}\n")
        askpass.chmod(0o700)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock), "SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force"}
        subprocess.run(["ssh-add", str(key)], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        n1 = ssh_hosts.hosts[0]
        conn = connect(resolve(n1.name, n1.address, _settings(ssh_hosts, identity_file=str(key))), Accepted())
        try:
            assert conn.run("hostname")[1].strip() == "n1"
        finally:
            conn.close()
    finally:
        with open(authorized, "w") as f:
            f.write(original)
        agent.terminate()
        agent.wait(timeout=10)

"""A real sshd on every host of a testbed: own host key, key-only root login, a known_hosts for the clients.

Files (under the testbed dir): ssh/id_ed25519 (client key), ssh/authorized_keys, ssh/known_hosts (each host as
`name,address`), ssh/config (an OpenSSH client config: `ssh -F ssh/config n1`, pdsh), hosts/<name>/sshd_*.
"""

import os
import signal
import socket
from contextlib import contextmanager
from dataclasses import dataclass

from tests.harness.shell import HarnessError, sh, wait_until

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = "/run/sshd"  # compiled into Debian's sshd; the package normally creates it when the service starts

SSHD_CONFIG = """\
Port 22
ListenAddress 0.0.0.0
HostKey {dir}/ssh_host_ed25519_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# StrictModes would refuse keys under /tmp (world-writable parent).
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
MaxSessions 64
MaxStartups 200:30:400
Subsystem sftp internal-sftp
"""


@dataclass
class SshHosts:
    bed: object              # the Testbed whose hosts run sshd
    user: str
    identity_file: str
    known_hosts: str
    ssh_config: str
    sshd_pids: dict          # host name -> sshd listener pid (root namespace view)

    @property
    def hosts(self):
        return self.bed.hosts

    def connect(self, host, **kw):
        """A paramiko SSHClient logged in as root on host, host key checked against known_hosts (RejectPolicy)."""
        import paramiko
        client = paramiko.SSHClient()
        client.load_host_keys(self.known_hosts)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        kw.setdefault("timeout", 10)
        client.connect(host.address, username=self.user, key_filename=self.identity_file,
                       allow_agent=False, look_for_keys=False, **kw)
        return client

    def stop(self):
        """Stop each host's sshd listener by its recorded pid (sessions die with the host)."""
        for pid in self.sshd_pids.values():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.sshd_pids.clear()


def start_ssh(bed):
    """Generate the keys, start sshd on every host, write known_hosts and the client config."""
    os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
    ssh_dir = bed.path("ssh")
    os.makedirs(ssh_dir, mode=0o700)
    identity = os.path.join(ssh_dir, "id_ed25519")
    _keygen(identity, "kit-harness-client")
    authorized = os.path.join(ssh_dir, "authorized_keys")
    os.rename(identity + ".pub", authorized)
    pids, known = {}, []
    for host in bed.hosts:
        pids[host.name] = _start_sshd(host, authorized)
        pub = open(os.path.join(host.dir, "ssh_host_ed25519_key.pub")).read().split()
        known.append(f"{host.name},{host.address} {pub[0]} {pub[1]}")
    known_hosts = _write(os.path.join(ssh_dir, "known_hosts"), "\n".join(known) + "\n")
    config = _write(os.path.join(ssh_dir, "config"), _client_config(bed, identity, known_hosts))
    for host in bed.hosts:
        wait_until(lambda: _port_open(host.address, 22), f"sshd on {host.name}", log=host.dir + "/sshd.log")
    return SshHosts(bed, "root", identity, known_hosts, config, pids)


def _start_sshd(host, authorized_keys):
    """Start sshd inside the host (it daemonizes; tini adopts it) and return its pid in the root namespace."""
    _keygen(os.path.join(host.dir, "ssh_host_ed25519_key"), host.name)
    cfg = _write(os.path.join(host.dir, "sshd_config"),
                 SSHD_CONFIG.format(dir=host.dir, authorized_keys=authorized_keys))
    proc = host.run([SSHD, "-f", cfg, "-E", os.path.join(host.dir, "sshd.log")], check=False)
    if proc.returncode != 0:
        raise HarnessError(f"sshd on {host.name} exited {proc.returncode}: {proc.stderr.strip()}")
    pidfile = os.path.join(host.dir, "sshd.pid")
    nspid = int(wait_until(lambda: _read(pidfile), f"sshd's pid file on {host.name}"))
    return next(p["pid"] for p in host.processes() if p["nspid"] == nspid)


@contextmanager
def variant_sshd(ssh, host, port: int, subsystem: str = "internal-sftp", extra: str = ""):
    """A second sshd on `host`, at `port`, like the first but for its sftp line (`subsystem`: the line's
    command, or "" for none) and `extra` config lines, for the ways real hosts differ. Yields a known_hosts file
    that knows it (the session's own is left as it is); stopped afterwards."""
    name = f"sshd-{port}"
    text = SSHD_CONFIG.format(dir=host.dir, authorized_keys=os.path.join(ssh.bed.path("ssh"), "authorized_keys"))
    text = text.replace("Port 22\n", f"Port {port}\n").replace("sshd.pid", f"{name}.pid")
    text = text.replace("Subsystem sftp internal-sftp\n", f"Subsystem sftp {subsystem}\n" if subsystem else "")
    text += extra
    cfg = _write(os.path.join(host.dir, f"{name}_config"), text)
    proc = host.run([SSHD, "-f", cfg, "-E", os.path.join(host.dir, f"{name}.log")], check=False)
    if proc.returncode != 0:
        raise HarnessError(f"{name} on {host.name} exited {proc.returncode}: {proc.stderr.strip()}")
    nspid = int(wait_until(lambda: _read(os.path.join(host.dir, f"{name}.pid")), f"{name}'s pid file"))
    pid = next(p["pid"] for p in host.processes() if p["nspid"] == nspid)
    try:
        wait_until(lambda: _port_open(host.address, port), f"{name} on {host.name}")
        key = open(os.path.join(host.dir, "ssh_host_ed25519_key.pub")).read().split()
        known = _write(os.path.join(host.dir, f"{name}_known_hosts"),
                       open(ssh.known_hosts).read() + f"[{host.address}]:{port} {key[0]} {key[1]}\n")
        yield known
    finally:
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"), f"{name} to stop")


def _client_config(bed, identity, known_hosts):
    blocks = [f"Host {h.name}\n  HostName {h.address}\n" for h in bed.hosts]
    common = (f"Host {' '.join(h.name for h in bed.hosts)}\n  User root\n  IdentityFile {identity}\n"
              f"  IdentitiesOnly yes\n  UserKnownHostsFile {known_hosts}\n  StrictHostKeyChecking yes\n"
              f"  BatchMode yes\n  ConnectTimeout 5\n")
    return "".join(blocks) + common


def _keygen(path, comment):
    sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path])


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def _read(path):
    try:
        return open(path).read().strip()
    except OSError:
        return ""


def _port_open(address, port):
    try:
        socket.create_connection((address, port), timeout=0.5).close()
        return True
    except OSError:
        return False

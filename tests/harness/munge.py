"""A private munged: its own key, socket, pid, seed and log files under the testbed dir.

One munged in the root namespace serves every host: its socket is a file, and file sockets work across network
namespaces. slurm.conf points the daemons and clients at it (AuthInfo=socket=...).
"""

import os

from tests.harness.daemons import start_daemon
from tests.harness.shell import sh, wait_until


def start_munge(bed):
    """Create the key (dir 700) and socket dir (755, munged refuses looser), start munged, wait for its socket."""
    key_dir, sock_dir = bed.path("munge", "key"), bed.path("munge", "run")
    os.makedirs(key_dir, mode=0o700)
    os.makedirs(sock_dir, mode=0o755)
    os.chmod(bed.path("munge"), 0o755)
    key = os.path.join(key_dir, "munge.key")
    sh(["mungekey", "--create", f"--keyfile={key}"])
    socket_path = os.path.join(sock_dir, "munge.socket")
    log = bed.path("munge", "munged.log")
    daemon = start_daemon("munged", ["munged", "--foreground", f"--key-file={key}", f"--socket={socket_path}",
                                     f"--pid-file={sock_dir}/munged.pid", f"--seed-file={key_dir}/munged.seed",
                                     f"--log-file={log}"], log)

    def ready():
        daemon.check_alive()
        return os.path.exists(socket_path)

    wait_until(ready, "munged's socket", log=log)
    return daemon, socket_path

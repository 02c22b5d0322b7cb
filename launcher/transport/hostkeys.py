"""Host keys: checked against known_hosts, never trusted silently. Unknown or changed keys are refused with a
message that says how to verify and add the key; accepting new keys is an explicit opt-in that kit reports."""

import logging
import threading
from typing import Any

from launcher.transport.endpoint import Endpoint

log = logging.getLogger(__name__)


def load_known_hosts(client, endpoint: Endpoint) -> None:
    import os

    for path in endpoint.known_hosts:
        if os.path.isfile(path):
            client.load_host_keys(path) if path == endpoint.known_hosts[0] else client.load_system_host_keys(path)


def key_name(endpoint: Endpoint) -> str:
    return endpoint.hostname if endpoint.port == 22 else f"[{endpoint.hostname}]:{endpoint.port}"


def unknown_key_message(endpoint: Endpoint) -> str:
    files = " or ".join(endpoint.known_hosts) or "~/.ssh/known_hosts"
    port = "" if endpoint.port == 22 else f"-p {endpoint.port} "
    return (
        f"{endpoint.where}: host key unknown (not in {files}); refusing to connect. Verify the key's "
        f"fingerprint with the host's admin, then add it: ssh-keyscan {port}{endpoint.hostname} >> "
        f"{endpoint.known_hosts[0] if endpoint.known_hosts else '~/.ssh/known_hosts'} "
        f"(or set ssh.accept_new_host_keys: true to accept and record new keys)"
    )


def changed_key_message(endpoint: Endpoint) -> str:
    return (
        f"{endpoint.where}: host key CHANGED since it was recorded in known_hosts; refusing to connect "
        f"(a reinstalled machine, or someone in between). If the change is expected, verify the new "
        f"fingerprint, remove the old entry with `ssh-keygen -R {key_name(endpoint)}` and add the new key"
    )


class Accepted:
    """The keys accepted under `accept_new_host_keys` in this process: the run record lists them."""

    def __init__(self):
        self.keys = []
        self._lock = threading.Lock()

    def policy(self, endpoint: Endpoint):
        from launcher.transport import load_paramiko

        paramiko: Any = load_paramiko()
        accepted = self

        class AcceptAndRecord(paramiko.MissingHostKeyPolicy):
            def missing_host_key(self, client, hostname, key):
                fingerprint = key.fingerprint  # "SHA256:..." as ssh-keygen -l prints it
                with accepted._lock:
                    accepted.keys.append(
                        {"host": endpoint.name, "address": hostname, "type": key.get_name(), "fingerprint": fingerprint}
                    )
                client.get_host_keys().add(hostname, key.get_name(), key)
                log.warning(
                    f"kit: warning: accepted the NEW host key of {endpoint.where}: {key.get_name()} "
                    f"{fingerprint} (ssh.accept_new_host_keys is on; recorded in the run record)"
                )

        return AcceptAndRecord()

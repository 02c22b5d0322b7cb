"""The `ssh:` section of a cluster config: how kit logs in to a host (an SSH cluster's hosts, a SLURM cluster's
login host). Either backend owns it as one of its sections (its placement's `sections`)."""

import os
from typing import Annotated, Optional

from pydantic import Field

from launcher.errors import KitError
from launcher.spec.base import OneLine
from launcher.spec.cluster import Section


class SshOptions(Section):
    user: Optional[OneLine] = None
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    identity_file: Optional[str] = None
    known_hosts: Optional[str] = None
    # Seconds, finite (a socket takes no .inf or .nan); bounded: every wait kit makes on a host derives from it.
    connect_timeout: Annotated[float, Field(gt=0, le=600, allow_inf_nan=False)] = 10.0
    # A host that answers nothing (not even SSH's keepalive requests) for this long is lost: kit tears the run
    # down on the other hosts; the lost host's watchdog stops the node by itself after twice as long without kit.
    host_timeout: Annotated[float, Field(ge=2, le=3600, allow_inf_nan=False)] = 30.0
    # An OpenSSH client config read for HostName, User, Port, IdentityFile, ProxyJump (default ~/.ssh/config).
    config_file: Optional[str] = None
    # Explicit opt-in: connect to hosts whose key is not in known_hosts; the keys accepted go into the run record.
    accept_new_host_keys: bool = False


# The files a cluster's `ssh:` section names on this machine, and what to do when one is not there. OpenSSH
# ignores a missing IdentityFile of its config; one named in the cluster file is a mistake to say at once.
SSH_FILES = {
    "identity_file": "give the private key's path, or leave it out to use your ssh-agent and ~/.ssh/config",
    "config_file": "give an OpenSSH client config's path, or leave it out to read ~/.ssh/config",
}


def check_key_files(options: Optional[SshOptions]) -> None:
    """Raise (one line naming the field) if a file the `ssh:` section names is not there, when kit is about to
    log in with it (not for a dry-run: the plan needs no key). A relative path is taken from the current
    directory, as ssh takes it; errors show the path tried."""
    for field, fix in SSH_FILES.items():
        path = getattr(options, field) if options is not None else None
        tried = None if path is None else os.path.abspath(os.path.expanduser(path))
        if tried is not None and not os.path.isfile(tried):
            raise KitError(f"ssh.{field} {tried}: no such file; {fix}")

"""Where and as whom to connect: the cluster's `ssh:` section over the user's OpenSSH client config."""

import getpass
import os
from typing import NamedTuple, Optional

DEFAULT_CONFIG = "~/.ssh/config"
USER_KNOWN_HOSTS = "~/.ssh/known_hosts"


# A NamedTuple, not a dataclass: it is built before the early logins' TCP connect (ssh/early.py), and importing
# dataclasses costs 12 ms there.
class Endpoint(NamedTuple):
    name: str  # the host's name in the cluster config (used in every message)
    hostname: str  # what we connect to
    port: int
    user: str
    identity_files: tuple[str, ...] = ()
    proxy_jump: Optional[str] = None
    timeout: float = 10.0
    known_hosts: tuple[str, ...] = ()
    accept_new: bool = False
    extra: dict = {}  # never changed: resolve() gives each its own

    @property
    def where(self) -> str:
        return f"host {self.name} ({self.user}@{self.hostname}:{self.port})"


def ssh_settings(options) -> dict:
    """The non-secret connection settings a run record keeps, so status and cancel can reconnect later."""
    if options is None:
        return {}
    data = options.model_dump(mode="json")
    data["port_given"] = "port" in options.model_fields_set
    return data


def _config_lookup(name: str, config_file: Optional[str]) -> dict:
    path = os.path.expanduser(config_file or DEFAULT_CONFIG)
    if not os.path.isfile(path):
        return {}
    from launcher.transport import load_paramiko

    paramiko = load_paramiko()
    return paramiko.SSHConfig.from_path(path).lookup(name)


def _known_hosts(settings: dict, cfg: dict) -> tuple[str, ...]:
    """The known_hosts files, the first being where an accepted new key is written: the cluster's own, then the
    OpenSSH config's UserKnownHostsFile (which, as in OpenSSH, replaces ~/.ssh/known_hosts; `none`: no file)."""
    import shlex

    given = cfg.get("userknownhostsfile")
    from_config = [_tokens(f) for f in shlex.split(given)] if given else []
    # `/dev/null` (or `none`) in a config usually goes with StrictHostKeyChecking no, which kit does not follow:
    # it still checks host keys, against ~/.ssh/known_hosts then.
    from_config = [f for f in from_config if f.lower() != "none" and f != os.devnull] or [USER_KNOWN_HOSTS]
    files = [settings.get("known_hosts"), *from_config]
    return tuple(dict.fromkeys(os.path.expanduser(f) for f in files if f))


def _tokens(path: str) -> str:
    """OpenSSH's tokens in a file name that kit can expand: %d (home), %u (local user), %%."""
    return (
        path.replace("%%", "\0")
        .replace("%d", os.path.expanduser("~"))
        .replace("%u", getpass.getuser())
        .replace("\0", "%")
    )


def resolve(name: str, address: Optional[str], settings: dict) -> Endpoint:
    """The cluster's explicit `ssh:` values win, then the OpenSSH config's Host block, then defaults."""
    cfg = _config_lookup(name, settings.get("config_file"))
    # A Host block that renames the host says how to reach it; otherwise the cluster's address does.
    hostname = cfg.get("hostname", name)
    hostname = hostname if hostname != name else (address or name)
    port = settings.get("port") if settings.get("port_given") or "port" not in cfg else int(cfg["port"])
    identities = [settings["identity_file"]] if settings.get("identity_file") else cfg.get("identityfile", [])
    return Endpoint(
        name=name,
        hostname=hostname,
        port=int(port or 22),
        user=settings.get("user") or cfg.get("user") or getpass.getuser(),
        identity_files=tuple(os.path.expanduser(p) for p in identities),
        proxy_jump=cfg.get("proxyjump"),
        timeout=float(settings.get("connect_timeout") or 10.0),
        known_hosts=_known_hosts(settings, cfg),
        accept_new=bool(settings.get("accept_new_host_keys")),
        extra={"config_file": settings.get("config_file")},
    )

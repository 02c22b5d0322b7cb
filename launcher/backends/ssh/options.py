"""The SSH backend's own section of a cluster config, `sync:` (its `ssh:` section is transport/options.py)."""

from typing import Optional

from launcher.spec.base import OneLine
from launcher.spec.cluster import Section


class SyncOptions(Section):
    """Code sync for hosts with disks of their own: what changed under `source` is copied into each host's workdir
    over SFTP before the run starts."""

    # A local directory (default: the directory kit runs in).
    source: Optional[OneLine] = None
    # Globs relative to source (`**` spans directories). Default: the git-tracked files where source is a git
    # checkout, every file otherwise.
    include: list[OneLine] = []
    exclude: list[OneLine] = []

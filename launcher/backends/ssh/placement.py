"""How the planner places an SSH run: node i on the cluster's host i; the run's files are uploaded into each
host's workdir (the hosts may have disks of their own); the run record stays where kit runs. Also what the
placement owns: the cluster config's `sync:` section and the run record's handle (HANDLE)."""

import posixpath
from dataclasses import dataclass
from typing import Optional

from launcher.backends.handle import Handle
from launcher.planning.model import LaunchPlan, NodePlan
from launcher.planning.placement import CONFIG, RUN, Edge, Placement
from launcher.spec.base import OneLine
from launcher.spec.cluster import ClusterSpec, Section
from launcher.spec.job import JobSpec
from launcher.transport.options import SshOptions, check_key_files
from launcher.wellformed import checked, items, mapping

# The SSH backend's own section of a cluster config, `sync:` (its `ssh:` section is transport/options.py).


class SyncOptions(Section):
    """Code sync for hosts with disks of their own: what changed under `source` is copied into each host's workdir
    over SFTP before the run starts."""

    # A local directory (default: the directory kit runs in).
    source: Optional[OneLine] = None
    # Globs relative to source (`**` spans directories). Default: the git-tracked files where source is a git
    # checkout, every file otherwise.
    include: list[OneLine] = []
    exclude: list[OneLine] = []


# What an SSH run's record keeps of its own (its handle): the connection settings to log in again (no secrets), the
# host keys accepted for it, and how long each phase of its start took.


@dataclass(frozen=True)
class SshHandle(Handle):
    ssh: Optional[dict] = checked(None, mapping)  # connection settings (no secrets), to log in again
    accepted_host_keys: Optional[list] = checked(None, items)
    timings: Optional[dict] = checked(None, mapping)  # seconds per phase (bench/ssh_fanout.py reads them)


HANDLE = SshHandle


SYNC_LISTED = 40  # the dry-run's text lists this many synced files (its JSON every one)


def uploads(plan: LaunchPlan, node: NodePlan) -> list[tuple[str, str]]:
    """[(the plan's file name, path on the node's host)], in upload order: the node's files from the plan, under
    its workdir on that host. The backend uploads exactly this list and the dry-run prints it. (kit's node
    watchdog is not among them: it travels in the check program, boot.py.)"""
    return [(rel, posixpath.join(node.workdir, rel)) for rel in node.files]


class SshPlacement(Placement):
    name = "ssh"
    sections = {"ssh": SshOptions, "sync": SyncOptions}
    uploads_files = True
    env_check_where = "checks"  # each host's fingerprint comes back with its checks (ssh/preflight.py)

    def validate(self, cluster: ClusterSpec, stage: str = CONFIG, *, plan=None, entrypoint=None, base_dir=".") -> None:
        if stage == CONFIG and not cluster.hosts:
            raise ValueError("an ssh cluster needs hosts: [...]")
        if stage == RUN:
            check_key_files(cluster.ssh)
        super().validate(cluster, stage, plan=plan, entrypoint=entrypoint, base_dir=base_dir)

    def at_edge(
        self, cluster: ClusterSpec, plan=None, job: Optional[JobSpec] = None, *, cwd: str = ".", embedded: bool = False
    ) -> Edge:
        """A plan: the files of the cluster's `sync:`, listed here (this machine's disk) at submit time; the nodes'
        code is seen here in the sync source."""
        if plan is None or cluster.sync is None:
            return super().at_edge(cluster, plan, job, cwd=cwd, embedded=embedded)
        import dataclasses

        from launcher.backends.ssh.sync_list import check_script_synced, sync_plan

        sync = sync_plan(cluster.sync, cluster.run_root, cwd)
        if job is not None and job.entrypoint.script is not None:
            check_script_synced(sync, job.entrypoint.script, cluster.workdir)
        return super().at_edge(cluster, dataclasses.replace(plan, sync=sync), job, cwd=cwd)

    def binding(self, cluster: ClusterSpec, job: JobSpec) -> dict:
        from launcher.preflight.entrypoint import EntrypointRef
        from launcher.transport.endpoint import ssh_settings

        return {
            "settings": ssh_settings(cluster.ssh),
            "addresses": {h.name: h.address for h in cluster.hosts},
            "entrypoint": EntrypointRef(job.entrypoint.module, job.entrypoint.script),
        }

    def dryrun(self, plan: LaunchPlan, node: Optional[NodePlan] = None) -> list[str]:
        if node is not None:
            files = uploads(plan, node)
            return ["  uploads (host:path):" if files else "  uploads: none"] + [
                f"    {node.host}:{path}" for _, path in files
            ]
        workdirs = ", ".join(sorted({n.workdir for n in plan.nodes}))
        return self._dryrun_sync(plan) + [
            f"files: uploaded over SFTP into each host's workdir ({workdirs}) before any node starts, as listed "
            f"per node. A workdir the hosts share (one filesystem, such as the directory you submit from "
            f"mounted on every host) holds every node's accelerate.node<R>.yaml side by side and one copy of the "
            f"others; separate disks hold one node's files each. kit's node watchdog is no file there: it "
            f"travels with the checks over each node's SSH channel. The run record and the node logs stay in "
            f"{plan.run_dir} under the directory you submit from."
        ]

    @staticmethod
    def _dryrun_sync(plan: LaunchPlan) -> list[str]:
        s = plan.sync
        if s is None:
            return []
        shown = s.files[:SYNC_LISTED]
        more = len(s.files) - len(shown)
        return (
            [
                f"sync: {len(s.files)} file(s) from {s.source} ({s.chosen_by}), copied into each host's workdir "
                f"before the checks where they differ (size and SHA-256); a workdir that is {s.source} itself on a "
                f"shared filesystem is left alone"
            ]
            + [f"  {f}" for f in shown]
            + ([f"  ... and {more} more (--format json lists every one)"] if more else [])
        )


PLACEMENT = SshPlacement()

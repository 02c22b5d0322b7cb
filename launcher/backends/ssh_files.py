"""Which files an SSH run puts on each host, and where: the node's files from the plan, under the node's
workdir on that host. The backend uploads exactly this list and the dry-run prints it. (kit's node watchdog
is not among them: it travels in the check program, ssh_boot.py.)"""

import posixpath

from launcher.plan.model import LaunchPlan, NodePlan


def uploads(plan: LaunchPlan, node: NodePlan) -> list[tuple[str, str]]:
    """[(the plan's file name, path on the node's host)], in upload order."""
    return [(rel, posixpath.join(node.workdir, rel)) for rel in node.files]

"""Which files an SSH run puts on each host, and where: the node's files from the plan and kit's node watchdog,
under the node's workdir on that host. The backend uploads exactly this list and the dry-run prints it."""

import posixpath

from launcher.plan.model import LaunchPlan, NodePlan

REMOTE_WATCHDOG = "kit-watchdog.py"
WATCHDOG = "watchdog"   # the name of kit's own file in uploads(): not one of the plan's files


def watchdog_path(plan: LaunchPlan, node: NodePlan) -> str:
    return posixpath.join(node.workdir, plan.run_dir, REMOTE_WATCHDOG)


def uploads(plan: LaunchPlan, node: NodePlan) -> list[tuple[str, str]]:
    """[(the plan's file name, or WATCHDOG; path on the node's host)], in upload order."""
    return [(rel, posixpath.join(node.workdir, rel)) for rel in node.files] + [(WATCHDOG, watchdog_path(plan, node))]

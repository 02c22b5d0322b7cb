"""The environment a node process starts with, merged in one place: the plan's inherit policy applied to the
submitter's environment, then the plan's own variables, then the secret values that no command, script or record
carries."""

from launcher.backends import registry
from launcher.errors import KitError
from launcher.planning.model import LaunchPlan, NodePlan


def dropped_vars(plan: LaunchPlan, environ) -> list[str]:
    """Names in `environ` the nodes will not inherit (names only: values may be secret)."""
    return sorted(name for name in environ if plan.inherit.drops(name))


def missing_secrets(node: NodePlan, environ) -> list[str]:
    """The node's `secret_env` names that neither the plan nor `environ` gives a value."""
    return [n for n in node.secret_env if n not in node.env and n not in environ]


def process_env(plan: LaunchPlan, node: NodePlan, environ, inherit: bool = True) -> dict[str, str]:
    """`environ` filtered by the plan's policy (with `inherit`; a remote process keeps its login's environment and
    gets only what is added), + the node's env + its secrets: values kept in the plan (job/cluster env) and
    `secret_env` pass-throughs taken from `environ`, even where the policy drops that name otherwise."""
    missing = missing_secrets(node, environ)
    if missing:
        raise KitError(f"secret_env: {', '.join(missing)} not set in your environment; export it first")
    env = {k: v for k, v in environ.items() if not plan.inherit.drops(k)} if inherit else {}
    # node.env holds every value the plan decided, secret ones included (the command text leaves those out).
    env.update(node.env)
    env.update({n: environ[n] for n in node.secret_env if n not in node.env})
    return env


def node_process_env(plan: LaunchPlan, node: NodePlan, environ) -> dict[str, str]:
    """What a node started on this machine gets: process_env with the submitter's environment inherited."""
    return process_env(plan, node, environ, inherit=True)


def dropped_warning(plan: LaunchPlan, environ) -> str:
    """One line for the console, or "" when nothing was dropped. Only nodes started from this machine's
    environment inherit it (their placement says)."""
    names = dropped_vars(plan, environ) if registry.placement(plan.backend).inherits_submit_env else []
    if not names:
        return ""
    return (
        f"kit: warning: not passed to the nodes from your environment: {', '.join(names)} "
        f"(set them in the job's env to use them)"
    )

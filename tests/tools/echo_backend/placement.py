"""The echo backend's planning: a local cluster's, with its own dry-run line."""

from launcher.backends.local.placement import LocalPlacement


class EchoPlacement(LocalPlacement):
    name = "echo"

    def dryrun_head(self, plan) -> list[str]:
        return [f"echo: {len(plan.nodes)} node(s) on this machine"]


PLACEMENT = EchoPlacement()

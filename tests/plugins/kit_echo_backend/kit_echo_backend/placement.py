"""The echo backend's planning: a local cluster's, with its own config section and dry-run line."""

from dataclasses import dataclass
from typing import Optional

from launcher.backends.handle import Handle
from launcher.backends.local.placement import LocalPlacement
from launcher.spec.cluster import Section
from launcher.wellformed import checked, text


class EchoOptions(Section):
    greeting: str = "hello"


class EchoPlacement(LocalPlacement):
    name = "echo"
    sections = {"echo": EchoOptions}

    def binding(self, cluster, job) -> dict:
        echo = cluster.echo or EchoOptions()
        return {**super().binding(cluster, job), "greeting": echo.greeting}

    def dryrun(self, plan, node=None) -> list[str]:
        if node is not None:
            return super().dryrun(plan, node)
        return [f"echo: {len(plan.nodes)} node(s) on this machine"]


PLACEMENT = EchoPlacement()


# What an echo run's record keeps of its own: the greeting it said.


@dataclass(frozen=True)
class EchoHandle(Handle):
    greeting: Optional[str] = checked(None, text)


HANDLE = EchoHandle

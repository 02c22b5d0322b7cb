"""The subprocess backend's planning: the contract's defaults (node i on the cluster's host i), nothing overridden
but the name and the interpreter."""

from launcher.planning.placement import Placement


class SubprocessPlacement(Placement):
    name = "subprocess"

    def default_python(self, kit_python: str) -> str:
        return kit_python  # the nodes are processes of this machine: kit's interpreter is theirs


PLACEMENT = SubprocessPlacement()

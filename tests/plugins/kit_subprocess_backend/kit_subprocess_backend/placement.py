"""The subprocess backend's planning: the contract's defaults (node i on the cluster's host i), nothing overridden
but the name and the interpreter."""

from launcher.planning.placement import Placement


class SubprocessPlacement(Placement):
    name = "subprocess"
    nodes_run_kits_python = True  # the nodes are processes of this machine: kit's interpreter is theirs


PLACEMENT = SubprocessPlacement()

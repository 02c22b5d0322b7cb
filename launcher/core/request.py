"""What one submission names, as plain data both faces build (the CLI from its flags, the API from its keywords) and
the core loads. Light (a named tuple: no dataclasses, no typing): the CLI makes one before its start-up fast path
forks the planner.

    job       a job file, or a script run as a job built from the flags
    module    or a module run as one (python -m MODULE)
    cluster   a cluster file; None: this machine
    sweep     a sweep file (--sweep), for a job without a sweep section
    run_id, nodes, gpus, procs_per_node, strategy, mixed_precision, port: as the flags give them (None: not given)
    sets      `--set KEY=VALUE` items (a tuple)
    args      words appended to the job's arguments (a tuple)
"""

from collections import namedtuple


class Request(
    namedtuple(
        "Request",
        [
            "job",
            "module",
            "cluster",
            "sweep",
            "run_id",
            "nodes",
            "gpus",
            "procs_per_node",
            "strategy",
            "mixed_precision",
            "port",
            "sets",
            "args",
        ],
        defaults=[None, None, None, None, None, None, None, None, None, None, None, (), ()],
    )
):
    __slots__ = ()

    @property
    def built(self) -> bool:
        """The job is built from the command line (a script or -m MODULE), not read from a job file."""
        from launcher.spec.adhoc import is_script

        return self.module is not None or is_script(self.job)

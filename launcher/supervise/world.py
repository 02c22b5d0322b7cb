"""Did the planned world form? Every node's launcher past its rendezvous (torchrun starts a node's ranks, and makes
their log directories, only then), within the plan's `timeouts.rendezvous`. If not, each node checks from itself
whether it can reach the master, and the run fails with one line that names the node and the cause instead of
waiting out torch's own store timeout (15 minutes) in a flood of C++ stack traces."""

import time
from typing import Callable, Optional

from launcher.planning.model import LaunchPlan, NodePlan
from launcher.status import NEVER_JOINED, Failure

NOT_FORMED = 124  # the run's exit code then (timeout(1)'s)
POLL = 2.0


def ranks_started(workdir: str, run_dir: str, node: NodePlan, listdir=None) -> bool:
    """The node's ranks have started: torchrun made their log directories (`<run dir>/node<R>.ranks/<id>/attempt_N`,
    from --log_dir), which it does only once its rendezvous is done. `listdir`: how to list a directory where it
    is (this machine's os.listdir by default; SFTP's, a login host's)."""
    import os
    import posixpath
    from launcher.planning.attempt import attempt_of, rdzv_id

    listdir = listdir or os.listdir
    top = posixpath.join(workdir, run_dir, f"node{node.machine_rank}.ranks")
    attempt = attempt_of(node)
    # A restart's world: only its own directories count (the dead world's are still there).
    mine = (lambda sub: True) if attempt == 1 else (lambda sub: sub.startswith(rdzv_id(attempt) + "_"))
    try:
        return any(
            name.startswith("attempt_")
            for sub in listdir(top)
            if mine(sub)
            for name in listdir(posixpath.join(top, sub))
        )
    except OSError:
        return False


class WorldWatch:
    """`joined(node) -> bool`: the node's ranks have started. `reach(node) -> problem line or None`: checked from
    that node. poll() is cheap to call often: it looks at most every POLL seconds."""

    def __init__(
        self,
        plan: LaunchPlan,
        joined: Callable[[NodePlan], bool],
        reach: Callable[[NodePlan], Optional[str]],
        clock=time.monotonic,
        named_host=None,
        launched: Optional[Callable[[NodePlan], bool]] = None,
    ):
        """`named_host(node)`: the host to name in the failure (a SLURM node's comes from the allocation).
        `launched(node)`: whether the node's launcher process runs, where the backend can tell (with a static
        rendezvous no node's ranks start until all have come: this names the one that never came)."""
        self.plan, self.joined, self.reach, self.clock = plan, joined, reach, clock
        self.launched = launched
        self.named_host = named_host or (lambda node: node.host)
        self.deadline = clock() + plan.limits.rendezvous_timeout
        # A world of one process has no rendezvous and no peer to wait for (a one-process node runs its rank
        # directly, with no launcher that would log a join): it formed when its node started, which is also when
        # the hang watch's clock starts.
        self.formed = plan.world.world_size == 1
        self.formed_at = clock() if self.formed else None
        self._seen: set = set()
        self._next = 0.0

    def poll(self) -> Optional[Failure]:
        """None while the world may still form (or has); a Failure once the deadline passed without it."""
        now = self.clock()
        if self.formed or now < self._next:
            return None
        self._next = now + POLL
        for node in self.plan.nodes:
            if node.machine_rank not in self._seen and self._joined(node):
                self._seen.add(node.machine_rank)
        if len(self._seen) == len(self.plan.nodes):
            self.formed, self.formed_at = True, now
            return None
        if now < self.deadline:
            return None
        return self.diagnose()

    def _joined(self, node: NodePlan) -> bool:
        try:
            return bool(self.joined(node))
        except Exception:  # a host that cannot be asked has not been seen to join
            return False

    def _launched(self, node: NodePlan) -> bool:
        if self.launched is None:  # cannot tell: not the one to blame
            return True
        try:
            return bool(self.launched(node))
        except Exception:  # cannot tell: not the one to blame
            return True

    def diagnose(self) -> Failure:
        w, limit = self.plan.world, self.plan.limits.rendezvous_timeout
        missing = [n for n in self.plan.nodes if n.machine_rank not in self._seen]
        # The nodes that dial the master first (the master checks its own port last): the first that cannot
        # reach it is the one named.
        order = sorted(self.plan.nodes, key=lambda n: (n not in missing, n.machine_rank == 0, n.machine_rank))
        for node in order:
            try:
                problem = self.reach(node)
            except Exception as e:
                problem = f"could not check its route to the master ({e or type(e).__name__})"
            if problem:
                return Failure(
                    node.machine_rank,
                    self.named_host(node),
                    None,
                    NOT_FORMED,
                    NEVER_JOINED,
                    f"{problem}; check routes and firewalls between the nodes, or run kit doctor",
                )
        first = missing[0]
        if self.launched is not None:
            absent = [n for n in missing if not self._launched(n)]
            if absent:
                first = absent[0]
                return Failure(
                    first.machine_rank,
                    self.named_host(first),
                    None,
                    NOT_FORMED,
                    NEVER_JOINED,
                    f"its launcher did not start within {limit:g} s (still in its setup lines?); "
                    f"see its log (kit logs --node {first.machine_rank})",
                )
        return Failure(
            first.machine_rank,
            self.named_host(first),
            None,
            NOT_FORMED,
            NEVER_JOINED,
            f"the world did not form within {limit:g} s although every node reaches the master "
            f"{w.master_addr}:{w.master_port}; see the node logs (kit logs)",
        )

"""Has any rank made progress lately? When no rank has written anything for the plan's `timeouts.hang` seconds
after the world formed, the run is hung: kit records every rank's stack (py-spy, on each node) under the run record,
names the stuck ranks with their innermost frames, and stops the run."""

import os
import time
from typing import Callable, Optional

from launcher.planning.model import LaunchPlan
from launcher.preflight.stacks import innermost
from launcher.status import HUNG, Failure

HUNG_CODE = 124


class HangWatch:
    """`world`: the run's WorldWatch (the clock starts when the world forms); `last_output()`: monotonic time of the
    last rank output; `dump()`: rank -> stack text, taken on the nodes; `record_dir`: where stacks/ goes;
    `named_host(node)`: the host to name (a SLURM node's comes from the allocation, the plan holds a placeholder)."""

    def __init__(
        self,
        plan: LaunchPlan,
        world,
        last_output: Callable[[], float],
        dump: Callable[[], dict],
        record_dir: str,
        clock=time.monotonic,
        named_host=None,
    ):
        self.plan, self.world, self.last_output, self.dump = plan, world, last_output, dump
        self.record_dir, self.clock = record_dir, clock
        self.named_host = named_host or (lambda node: node.host)

    def poll(self) -> Optional[Failure]:
        limit = self.plan.limits.hang_timeout
        if not limit or not self.world.formed:
            return None
        since = max(self.world.formed_at, self.last_output())
        if self.clock() - since < limit:
            return None
        return self.diagnose(limit)

    def diagnose(self, limit: float) -> Failure:
        try:
            stacks = self.dump()
        except Exception as e:
            stacks, why = {}, f"; no stacks ({e or type(e).__name__})"
        else:
            why = ""
        where = os.path.join(self.record_dir, "stacks")
        if stacks:
            os.makedirs(where, exist_ok=True)
            for rank, text in stacks.items():
                with open(os.path.join(where, f"rank{rank}.txt"), "w", encoding="utf-8") as f:
                    f.write(text)
        at = [f"rank {r} in {innermost(t) or 'an unknown frame'}" for r, t in sorted(stacks.items())]
        shown = "; ".join(at[:4]) + ("; ..." if len(at) > 4 else "")
        node = self.plan.nodes[0]
        tail = f": {shown}; stacks in {where}" if stacks else why
        return Failure(
            node.machine_rank,
            self.named_host(node),
            None,
            HUNG_CODE,
            HUNG,
            f"no rank made progress for {limit:g} s{tail}",
        )

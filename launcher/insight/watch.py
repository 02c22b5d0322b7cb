"""kit's watch over a running attempt (polled with the world and hang watches, supervise/supervisor.py): it marks
in the record when the world formed, and reads the training module's section reports from the node logs as they
grow, naming a straggler once (insight/stragglers.py): one line on the console, and in the record for kit status.
It never stops a run. What it sees goes into the record's timeline (mark, below), as a SLURM job's queue
states do."""

import os
import time
from typing import Callable, Optional

from launcher.insight.events import read_log_events
from launcher.insight.stragglers import Stragglers, below, line, record_fields
from launcher.states import RunState
from launcher.status import Failure

# The record's timeline: what kit sees happen to a run besides its attempts' starts and ends (status.json keeps
# those): the world formed, a SLURM job's queue states. One entry per event, appended under the record's lock.

WORLD_FORMED = "world formed"
QUEUED = (RunState.PENDING, RunState.REQUEUED)


def mark(record, event: str, attempt: Optional[int] = None, detail: str = "", at: Optional[float] = None) -> None:
    """Best effort: a record that cannot be written costs the entry, never the run."""
    entry = {"at": time.time() if at is None else at, "event": event, "attempt": attempt, "detail": detail}
    try:
        record.update_status(append={"timeline": [entry]})
    except Exception:
        pass


POLL = 1.0


class InsightWatch:
    """`world`: the attempt's WorldWatch (or None); `say`: kit's line to the console; `host_of(node)`: the host
    to name (a SLURM node's comes from the allocation)."""

    def __init__(self, plan, record, world, say: Callable[[str], None], host_of=None, clock=time.monotonic):
        self.plan, self.record, self.world, self.say, self.clock = plan, record, world, say, clock
        self.host_of = host_of or (lambda node: plan.nodes[node].host if 0 <= node < len(plan.nodes) else "?")
        self.stragglers = Stragglers(plan.world.world_size)
        # An attempt's lines follow the last attempt's in the same logs: read from where they end now.
        self._offsets = {n.machine_rank: _size(self._log(n.machine_rank)) for n in plan.nodes}
        self._formed = False
        self._next = 0.0

    def _log(self, node: int) -> str:
        return self.record.file(f"node{node}.log")

    def poll(self) -> Optional[Failure]:  # None: polled with the watches that stop a run, it never does
        now = self.clock()
        if now < self._next:
            return None
        self._next = now + POLL
        if not self._formed and self.world is not None and self.world.formed:
            self._formed = True
            ago = max(0.0, now - (self.world.formed_at or now))
            mark(self.record, WORLD_FORMED, self.plan.attempt, at=time.time() - ago)
        if self.stragglers.named is None:
            self._read()
        return None

    def _read(self) -> None:
        for node, offset in self._offsets.items():
            events, self._offsets[node] = read_log_events(self._log(node), offset, node)
            for event in events:
                found = self.stragglers.feed(event)
                if found is not None:
                    self._name(found)
                    return

    def _name(self, found) -> None:
        host = self.host_of(found.node) if found.node is not None else "?"
        score = below(found.score, self.stragglers.threshold)
        self.say(
            f"kit: straggler: {line(found, host)} (its relative score {score} over its last report windows; "
            f"the world steps at its pace)"
        )
        try:
            self.record.update_status(straggler={"host": host, **record_fields(found), "at": time.time()})
        except Exception:  # the record keeps its last good state; the console said it
            pass


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


__all__ = ["InsightWatch", "mark", "WORLD_FORMED", "QUEUED"]

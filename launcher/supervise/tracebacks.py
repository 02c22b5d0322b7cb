"""Tracebacks when ranks fail together: the first failure's traceback reaches the console whole; the tracebacks of
ranks that die because of it (their collective lost its peer, or they fail within WINDOW of it) stay in the node
logs, which keep every line.

Per output stream (a rank, or a one-process node), a traceback is held from its first line until its exception
line, so that it can be judged by what it raised; at most HOLD_SECONDS and HOLD_LINES, after which it is judged
as it stands. Meanwhile every other stream goes on live, and so does this one once the block is judged. After a
kept-back traceback, what its rank says next (the rest of a long message, C++ frames, teardown chatter) is kept
back with it while each line comes within TRAIL_SECONDS of the one before, at most TRAIL_LINES."""

import re
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from launcher.status import Failure

HOLD_SECONDS = 3.0  # a traceback is written at once; a node log read every second (SLURM) may split it
HOLD_LINES = 400
WINDOW = 60.0  # other ranks' tracebacks this soon after the first failure are its consequences
TRAIL_SECONDS = 2.0
TRAIL_LINES = 50

_START = "Traceback (most recent call last):"
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
# What a rank raises when another rank went first: its collective's peer is gone (gloo, NCCL, the store).
_CONSEQUENCE = re.compile(
    r"Connection (closed|reset) by peer|gloo/transport|Broken pipe|DistBackendError|"
    r"DistNetworkError|DistStoreError|NCCL communicator was aborted|ncclRemoteError|"
    r"Watchdog caught collective operation timeout|remote process exited"
)


def is_consequence(exception: str) -> bool:
    """Is this exception line (`RuntimeError: [...pair.cc:553] Connection closed by peer ...`) what a rank raises
    when a peer of its collective died?"""
    return bool(_CONSEQUENCE.search(exception))


def _ends(text: str) -> bool:
    """The exception line that ends a traceback's frames (not a frame, not the words between chained ones)."""
    return bool(text.strip()) and not text[0].isspace() and not text.startswith((_START, *_CHAIN))


@dataclass
class _Block:
    lines: list = field(default_factory=list)
    since: float = 0.0
    kept: bool = False  # the continuation of a kept-back traceback (a chained one): kept back too


class TracebackGate:
    """feed(stream, line, text) -> the lines to show now; `text` is the line without its tags. Not thread-safe:
    its owner serialises calls (the console's lock)."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._held: dict = {}  # stream -> _Block
        self._trailing: dict = {}  # stream -> [time of its last kept-back line, lines kept since]
        self._first: Optional[tuple[Any, float]] = None  # (stream, time) of the first failure shown
        self.first_kept: Optional[tuple[Any, str]] = None  # (stream, exception line) of the first traceback kept back

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def busy(self, stream) -> bool:
        """Is this stream's line part of a traceback being judged or kept back?"""
        return stream in self._held or stream in self._trailing

    def feed(self, stream, line: str, text: str) -> list:
        now = self._clock()
        out = self.expire()
        block = self._held.get(stream)
        if block is not None:
            block.lines.append(line)
            if _ends(text) or len(block.lines) >= HOLD_LINES:
                out += self._judge(stream, text if _ends(text) else "", now)
            return out
        if self._trails(stream, now):
            if text.startswith(_START):  # a chained traceback of the one kept back
                self._held[stream] = _Block([line], now, kept=True)
            return out
        if text.startswith(_START):
            self._held[stream] = _Block([line], now)
            return out
        return out + [line]

    def _trails(self, stream, now: float) -> bool:
        trail = self._trailing.get(stream)
        if trail is None:
            return False
        if now - trail[0] < TRAIL_SECONDS and trail[1] < TRAIL_LINES:
            self._trailing[stream] = [now, trail[1] + 1]
            return True
        del self._trailing[stream]
        return False

    def expire(self) -> list:
        """Judge the blocks held past HOLD_SECONDS (as they stand); their lines if shown."""
        now = self._clock()
        late = [s for s, b in self._held.items() if now - b.since >= HOLD_SECONDS]
        return [line for s in late for line in self._judge(s, "", now)]

    def finish(self, which=None) -> list:
        """Streams ended (their node's output did; `which(stream)` says which, all when None): judge what they
        hold now."""
        now = self._clock()
        ending = [s for s in self._held if which is None or which(s)]
        return [line for s in ending for line in self._judge(s, "", now)]

    def _judge(self, stream, exception: str, now: float) -> list:
        block = self._held.pop(stream)
        first = self._first
        soon_after = first is not None and first[0] != stream and now - first[1] < WINDOW
        if block.kept or soon_after or (is_consequence(exception) and (first is None or first[0] != stream)):
            self._trailing[stream] = [now, 0]
            self.first_kept = self.first_kept or (stream, exception)
            return []
        if first is None or now - first[1] >= WINDOW:
            self._first = (stream, now)
        return block.lines


def first_cause(failures: list) -> Optional[Failure]:
    """Of the failed nodes' failures in the order the nodes ended: the first, unless its words are a consequence
    of another rank's failure (its collective lost its peer) and a node that ended after it names a rank with an
    error of its own (not a teardown's SIGTERM or SIGKILL): on SLURM, srun ends every node when one ends, and the
    node whose rank aborted in the collective can end before the node whose rank raised."""
    if not failures:
        return None
    first = failures[0]
    if not is_consequence(first.last_line):
        return first
    stopped = (128 + signal.SIGTERM, 128 + signal.SIGKILL)
    return next(
        (
            f
            for f in failures[1:]
            if f.rank is not None and f.last_line and not is_consequence(f.last_line) and f.code not in stopped
        ),
        first,
    )


__all__ = ["TracebackGate", "is_consequence", "first_cause", "HOLD_SECONDS", "WINDOW"]

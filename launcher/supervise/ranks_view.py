"""What of many ranks' output reaches the console: every line, live, except the tracebacks of ranks that die after
the first failure (tracebacks.py) and second copies of library warnings (repeats.py). The node logs keep it all.

One view per run attempt, fed every node's tagged lines (after each node's NoiseFilter has taken the launcher's
own noise out); kit's note on what it kept back is said once, naming where to read it."""

import re

from launcher.supervise.repeats import Repeats
from launcher.supervise.tracebacks import TracebackGate

_TAG = re.compile(r"^\[node(\d+)(?:/rank(\d+))?\] ")
_TORCH_RANK = re.compile(r"^\[rank\d+\]: ")  # torch's prefix on a rank's traceback lines
_SOURCE = re.compile(r"\[[^\] ]+\.(?:cc|cpp|h|hpp):\d+\] ")  # gloo's `[/__w/.../pair.cc:553] ` before its words
SHOWN_EXCEPTION = 100


def stream_of(line: str) -> tuple:
    """((node, rank or None), the line's text without kit's tag and torch's `[rankN]: `)."""
    m = _TAG.match(line)
    if m is None:
        return (None, None), _TORCH_RANK.sub("", line, count=1)
    rank = None if m.group(2) is None else int(m.group(2))
    return (int(m.group(1)), rank), _TORCH_RANK.sub("", line[m.end() :], count=1)


class RanksView:
    """feed(line) -> the lines to show now; expire() -> lines whose hold ran out; finish(node) at a node's end;
    take_notes() -> kit's own lines to say (stderr). Not thread-safe: the console's lock serialises calls."""

    def __init__(self, run_id: str = "", clock=None):
        self.run_id = run_id or "RUN"
        self._gate = TracebackGate(clock) if clock else TracebackGate()
        self._repeats = Repeats()
        self._notes: list = []
        self._told = False

    @property
    def holding(self) -> bool:
        return self._gate.holding

    def feed(self, line: str) -> list:
        stream, text = stream_of(line)
        if not self._gate.busy(stream) and not self._repeats.show(stream, text):
            return self.expire()
        return self._noted(self._gate.feed(stream, line, text))

    def expire(self) -> list:
        return self._noted(self._gate.expire())

    def finish(self, node=None) -> list:
        """Node `node`'s output ended (every node's when None): what its streams hold is judged now."""
        return self._noted(self._gate.finish(None if node is None else (lambda stream: stream[0] == node)))

    def take_notes(self) -> list:
        notes, self._notes = self._notes, []
        return notes

    def _noted(self, lines: list) -> list:
        if self._gate.first_kept and not self._told:
            self._told = True
            self._notes.append(self._kept_note(*self._gate.first_kept))
        return lines

    def _kept_note(self, stream, exception: str) -> str:
        node, rank = stream
        who, flag = (f"rank {rank}", f"--rank {rank}") if rank is not None else (f"node {node}", f"--node {node}")
        said = f" ({_short(exception)})" if exception else ""
        return (
            f"kit: {who} failed too{said}; its traceback, and those of other ranks failing after the first, "
            f"are in the node logs only: kit logs {self.run_id} {flag}"
        )


def _short(exception: str) -> str:
    """An exception line's first sentence, without a C++ source location, at most SHOWN_EXCEPTION characters."""
    text = _SOURCE.sub("", exception, count=1)
    text = text.split(". ", 1)[0]
    return text if len(text) <= SHOWN_EXCEPTION else text[:SHOWN_EXCEPTION] + "..."


__all__ = ["RanksView", "stream_of"]

"""Which rank paces the world? Under DDP every rank's step takes as long as the slowest one's, so step times name no
one; the sections a rank times without a collective in them (train/insight.py: data loading, forward) do. As
NVIDIA's NVRx does, each rank is scored against the fastest rank, section by section and over its sections
together: (fastest + F) / (own + F), its score the lowest of these (F: a floor that keeps sections of microseconds
from scoring noise). A rank whose score over the last WINDOW report windows stays below the threshold is named,
once.

Pure: fed the training module's `sections` events (each rank's per-step means over one report window `w`)."""

from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Optional

THRESHOLD = 0.7
WINDOW = 3          # report windows (train/insight.py: 5 s each by default) a rank's score is taken over
FLOOR = 0.002       # seconds per step added to both sides of a section's ratio
SECTIONS = ("data", "forward")
BOTH = "data and forward"


@dataclass(frozen=True)
class Straggler:
    node: Optional[int]
    rank: int
    section: str         # the section it is slowest in, against the fastest rank
    ratio: float         # its time in that section over the fastest rank's
    score: float         # its relative score (the lowest over its sections)


class Stragglers:
    """feed(event) -> a Straggler the first time one is found, else None. `lost_s`: seconds the world waited for
    its slowest rank in the report windows where that rank scored below the threshold."""

    def __init__(self, world_size: int, threshold: float = THRESHOLD, window: int = WINDOW):
        self.world_size, self.threshold = world_size, threshold
        self._pending = defaultdict(dict)          # window -> rank -> report
        self._rounds = deque(maxlen=window)        # complete windows: rank -> report
        self._window = window
        self._nodes = {}
        self.named: Optional[Straggler] = None
        self.lost_s = 0.0
        self.worst: Optional[Straggler] = None     # the lowest-scoring rank of the last complete window

    def feed(self, event: dict) -> Optional[Straggler]:
        if event.get("e") != "sections" or not isinstance(event.get("r"), int) or not event.get("n"):
            return None
        rank = event["r"]
        self._nodes[rank] = event.get("node")
        w = event.get("w", event.get("to"))
        self._pending[w][rank] = event
        if len(self._pending[w]) < self.world_size:
            return None
        self._close(w)
        if self.named is not None or len(self._rounds) < self._window:
            return None
        found = self._lowest(self._totals())
        if found is not None and found.score < self.threshold:
            self.named = found
            return found
        return None

    def _close(self, w) -> None:
        """Window w is complete: count what it cost and keep it (older pending windows are dropped)."""
        reports = self._pending.pop(w)
        for old in [k for k in self._pending if k is not None and w is not None and k < w]:
            del self._pending[old]
        self._rounds.append(reports)
        means = {r: {s: e[s] for s in SECTIONS if _number(e.get(s))} for r, e in reports.items()}
        worst = self._lowest(means)
        self.worst = worst
        if worst is not None and worst.score < self.threshold:
            best = _best(means)
            excess = sum(max(0.0, means[worst.rank][s] - best[s]) for s in best if s in means[worst.rank])
            self.lost_s += excess * reports[worst.rank]["n"]

    def _totals(self) -> dict:
        """rank -> section -> seconds per step over the window's rounds (weighted by their steps)."""
        sums, steps = defaultdict(lambda: defaultdict(float)), defaultdict(lambda: defaultdict(int))
        for reports in self._rounds:
            for r, e in reports.items():
                for s in SECTIONS:
                    if _number(e.get(s)):
                        sums[r][s] += e[s] * e["n"]
                        steps[r][s] += e["n"]
        return {r: {s: sums[r][s] / steps[r][s] for s in sums[r]} for r in sums}

    def _lowest(self, means: dict) -> Optional[Straggler]:
        if len(means) < 2:
            return None
        # The sections together too: a rank stopped from outside loses its time in whichever it was in.
        means = {r: {**m, BOTH: sum(m.values())} if len(m) > 1 else m for r, m in means.items()}
        best = _best(means)
        found = None
        for r, sections in means.items():
            for s, t in sections.items():
                score = (best[s] + FLOOR) / (t + FLOOR)
                if found is None or score < found.score:
                    found = Straggler(self._nodes.get(r), r, s, round(t / best[s], 2) if best[s] else float("inf"),
                                      round(score, 3))
        return found


def _best(means: dict) -> dict:
    best = {}
    for sections in means.values():
        for s, t in sections.items():
            best[s] = min(t, best.get(s, t))
    return best


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def line(s: Straggler, host: str) -> str:
    """`node 1 (n2) rank 1, forward 1.9x the fastest rank` (what kit status and the console say)."""
    where = f"node {s.node} ({host}) " if s.node is not None else ""
    return f"{where}rank {s.rank}, {s.section} {s.ratio:.1f}x the fastest rank"


__all__ = ["Stragglers", "Straggler", "line", "THRESHOLD", "WINDOW"]

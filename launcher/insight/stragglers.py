"""Which rank paces the world? Under DDP every rank's step takes as long as the slowest one's, so step times name no
one; the sections a rank times without a collective in them (train/insight.py: data loading, forward) do. As
NVIDIA's NVRx does, each rank is scored against the fastest rank, section by section and over its sections
together: (fastest + F) / (own + F), its score the lowest of these (F: a floor that keeps sections of microseconds
from scoring noise). A rank whose score over the last WINDOW report windows stays below the threshold is named,
once, with the cause kit can see when it is the machine: the node's load average against its cores, and the
time the rank's training thread waited for a CPU (the ranks report both with their sections).

Pure: fed the training module's `sections` events (each rank's per-step means over one report window `w`)."""

import math
from collections import defaultdict, deque
from dataclasses import dataclass, replace
from typing import Optional

THRESHOLD = 0.7
WINDOW = 3  # report windows (train/insight.py: 5 s each by default) a rank's score is taken over
FLOOR = 0.002  # seconds per step added to both sides of a section's ratio
SECTIONS = ("data", "forward")
BOTH = "data and forward"


LOADED_WAIT = 0.5  # a rank that waited for a CPU at least this share of its excess was slowed by the machine


@dataclass(frozen=True)
class Straggler:
    node: Optional[int]
    rank: int
    section: str  # the section it is slowest in, against the fastest rank
    ratio: Optional[float]  # its time in that section over the fastest rank's (None: the fastest took no time)
    score: float  # its relative score (the lowest over its sections)
    own_s: float = 0.0  # its seconds per step in that section
    fastest_s: float = 0.0  # the fastest rank's
    load: Optional[float] = None  # its node's 1-minute load average (None: not reported)
    cpus: Optional[int] = None  # its node's cores
    wait_s: Optional[float] = None  # seconds per step its training thread waited for a CPU more than the rank
    # that waited least (a loaded machine takes CPU from every rank alike)
    threads: Optional[int] = None  # the run's own threads on its node (processes x torch threads)


class Stragglers:
    """feed(event) -> a Straggler the first time one is found, else None. `lost_s`: seconds the world waited for
    its slowest rank in the report windows where that rank scored below the threshold."""

    def __init__(self, world_size: int, threshold: float = THRESHOLD, window: int = WINDOW):
        self.world_size, self.threshold = world_size, threshold
        self._pending: defaultdict[object, dict[int, dict]] = defaultdict(dict)  # window -> rank -> report
        self._rounds: deque[dict[int, dict]] = deque(maxlen=window)  # complete windows: rank -> report
        self._window = window
        self._nodes: dict[int, Optional[int]] = {}  # rank -> its node, as reported
        self.named: Optional[Straggler] = None
        self.lost_s = 0.0
        self.worst: Optional[Straggler] = None  # the lowest-scoring rank of the last complete window

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
            self.named = self._with_machine(found)
            return self.named
        return None

    def _with_machine(self, s: Straggler) -> Straggler:
        """The named rank's machine over the window's rounds: its node's load (the latest), its CPU wait per step."""
        reports = [rd[s.rank] for rd in self._rounds if s.rank in rd]

        def last(key: str, whole: bool = False):
            return next(
                (
                    e[key]
                    for e in reversed(reports)
                    if _number(e.get(key)) and e[key] >= 0 and (not whole or isinstance(e[key], int))
                ),
                None,
            )

        waited = []  # (its wait per step more than the least of the other ranks', its steps) per round
        for rd in self._rounds:
            waits = {r: e["wait"] for r, e in rd.items() if _number(e.get("wait")) and e["wait"] >= 0}
            others = [w for r, w in waits.items() if r != s.rank]
            if s.rank in waits and others:
                waited.append((max(0.0, waits[s.rank] - min(others)), rd[s.rank]["n"]))
        steps = sum(n for _, n in waited)
        return replace(
            s,
            load=last("load"),
            cpus=last("cpus", True) or None,
            threads=last("threads", True),
            wait_s=round(sum(w * n for w, n in waited) / steps, 6) if steps else None,
        )

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
        sums: defaultdict[int, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
        steps: defaultdict[int, defaultdict[str, int]] = defaultdict(lambda: defaultdict(int))
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
                    # A fastest rank that took no time has no ratio: the line says both times instead.
                    found = Straggler(
                        self._nodes.get(r),
                        r,
                        s,
                        round(t / best[s], 2) if best[s] > 0 else None,
                        round(score, 3),
                        round(t, 6),
                        round(best[s], 6),
                    )
        return found


def _best(means: dict) -> dict:
    best: dict[str, float] = {}
    for sections in means.values():
        for s, t in sections.items():
            best[s] = min(t, best.get(s, t))
    return best


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def machine(s: Straggler) -> str:
    """Why the machine slowed the rank, when it did: `the machine is loaded (load 6.1 on 2 cores, other processes;
    rank 1 waited 60 ms a step more than the others for a CPU)`, or "" (a quiet machine, or nothing reported)."""
    loaded = bool(s.load is not None and s.cpus and s.load > s.cpus)
    waited = s.wait_s is not None and s.wait_s > 0 and s.wait_s >= LOADED_WAIT * max(s.own_s - s.fastest_s, 0.0)
    load = f"load {s.load:.1f} on {s.cpus} cores" if s.load is not None and s.cpus else ""
    wait = (
        f"rank {s.rank} waited {1000 * s.wait_s:.0f} ms a step more than the others for a CPU"
        if waited and s.wait_s
        else ""
    )
    if loaded and not waited and s.wait_s is not None:  # loaded, but its wait for a CPU does not explain it
        wait = (
            f"though rank {s.rank} waited only {1000 * s.wait_s:.0f} ms a step more than the others for a CPU: "
            f"something else slowed it too"
        )
    if loaded:
        assert s.load is not None  # loaded says so
        whose = (
            ""
            if s.threads is None
            else ", other processes"
            if s.load >= s.threads + 1
            else f", the run's own {s.threads} threads"
        )
        return "the machine is loaded (" + load + whose + (f"; {wait}" if wait else "") + ")"
    if waited:
        return "other processes took its CPU (" + wait + (f"; {load}" if load else "") + ")"
    return ""


def line(s: Straggler, host: str) -> str:
    """`node 1 (n2) rank 1, forward 1.9x the fastest rank` (what kit status and the console say), then the machine's
    load when that is what slowed it."""
    where = f"node {s.node} ({host}) " if s.node is not None else ""
    why = machine(s)
    return f"{where}rank {s.rank}, {slower(s)}" + (f"; {why}" if why else "")


def slower(s: Straggler) -> str:
    """`forward 1.9x the fastest rank`, or both times where the fastest rank took none."""
    if s.ratio is None:
        return f"{s.section} {1000 * s.own_s:.1f} ms per step against {1000 * s.fastest_s:.1f} ms on the fastest rank"
    return f"{s.section} {s.ratio:.1f}x the fastest rank"


def record_fields(s: Straggler) -> dict:
    """The straggler as status.json keeps it (every value finite or null)."""
    return {
        "node": s.node,
        "rank": s.rank,
        "section": s.section,
        "ratio": s.ratio,
        "score": s.score,
        "own_s": s.own_s,
        "fastest_s": s.fastest_s,
        "load": s.load,
        "cpus": s.cpus,
        "wait_s": s.wait_s,
        "threads": s.threads,
    }


def from_record(d: dict) -> Straggler:
    """The straggler status.json keeps (older records lack the times and the machine's load)."""
    return Straggler(
        d.get("node"),
        d.get("rank") or 0,
        d.get("section") or "?",
        d.get("ratio"),
        d.get("score") or 0.0,
        d.get("own_s") or 0.0,
        d.get("fastest_s") or 0.0,
        d.get("load"),
        d.get("cpus"),
        d.get("wait_s"),
        d.get("threads"),
    )


def below(score: float, threshold: float) -> str:
    """`0.696 < 0.7`: the score with as many digits as it takes for the comparison to read true."""
    for digits in range(2, 7):
        said = f"{score:.{digits}f}"
        if float(said) < threshold:
            return f"{said} < {threshold:g}"
    return f"{score!r} < {threshold!r}"


__all__ = [
    "Stragglers",
    "Straggler",
    "line",
    "slower",
    "machine",
    "below",
    "record_fields",
    "from_record",
    "THRESHOLD",
    "WINDOW",
]

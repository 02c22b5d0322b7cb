"""Goodput and badput of a run, from its record alone (pure): every second between its submission and its end is
given one category, so the categories add up to the run's wall time.

Goodput is the time the world spent in training steps whose progress was kept (not redone after a restart), less
what a straggler cost; badput is the rest, by cause. kit's record says when each attempt started and ended, how it
ended, when the world formed and a SLURM job's queue moves; the training module's events (train/insight.py, in the
node logs) say when its imports were done, when its world formed, its training loop, checkpoint saves and
restores, evaluations and progress. A job that reports nothing gets what kit saw: its queue, its start until the
world formed, restarts, then time "not reported by the job", which is neither goodput nor badput (kit cannot tell
its training from the rest), and no goodput figure. Goodput, badput and the time not reported add up to the wall
time."""

from dataclasses import dataclass, field
from typing import Optional

from launcher.insight.restarts import split
from launcher.insight.stragglers import Stragglers, machine, record_fields, slower
from launcher.states import AttemptEnd, RunState

QUEUE, STARTUP, RENDEZVOUS = "queue", "start-up and imports", "rendezvous"
RESTORE, SAVE, EVAL = "checkpoint restore", "checkpoint save", "evaluation"
LOST, DETECTION, RESTART = "progress lost since the last checkpoint", "failure detection", "restart"
WRAP_UP, UNREPORTED, STRAGGLER = "wrap-up and teardown", "not reported by the job", "straggler"
TRAINING = "training"
BADPUT = (QUEUE, STARTUP, RENDEZVOUS, RESTORE, SAVE, EVAL, STRAGGLER, LOST, DETECTION, RESTART, WRAP_UP)
SLACK = 1.0  # seconds an event may lie outside its attempt's window (clocks, kit's polling)


@dataclass
class Attempt:
    number: int
    start: float
    end: float
    state: str
    cause: str = ""
    events: list = field(default_factory=list)  # the main process's timeline events in this attempt
    sections: list = field(default_factory=list)
    # The record's moments of the restart after it (insight/restarts.py): kit saw the failure, every node ended;
    # and the restart's path ("" where the record does not say)
    noticed_at: Optional[float] = None
    nodes_ended_at: Optional[float] = None
    restart: str = ""


@dataclass
class Report:
    total_s: float
    goodput_s: Optional[float]
    badput: dict  # cause -> seconds, the causes kit knows (never the time the job did not report)
    time_to_first_step_s: Optional[float]
    attempts: list
    segments: list  # [start, end, category, attempt]
    straggler: Optional[dict]
    unreported_s: float = 0.0  # the world formed, the job reported nothing: neither goodput nor badput
    restarts: list = field(default_factory=list)  # each restart phase by phase (insight/restarts.split)

    @property
    def goodput(self) -> Optional[float]:
        return None if self.goodput_s is None or self.total_s <= 0 else self.goodput_s / self.total_s


class Painter:
    """Non-overlapping (start, end, category, attempt) segments; a later coat covers what is under it."""

    def __init__(self) -> None:
        self.segments: list = []

    def paint(self, start, end, category, attempt=None, only=None) -> None:
        if end is None or start is None or end <= start:
            return
        out = []
        for s, e, c, a in self.segments:
            if e <= start or s >= end or (only is not None and c != only):
                out.append((s, e, c, a))
                continue
            if s < start:
                out.append((s, start, c, a))
            out.append((max(s, start), min(e, end), category, a if attempt is None else attempt))
            if e > end:
                out.append((end, e, c, a))
        if only is None:
            covered = sorted((max(s, start), min(e, end)) for s, e, _, _ in self.segments if s < end and e > start)
            at = start
            for s, e in covered + [(end, end)]:
                if s > at:
                    out.append((at, s, category, attempt))
                at = max(at, e)
        self.segments = sorted(out)

    def total(self, category) -> float:
        return sum(e - s for s, e, c, _ in self.segments if c == category)

    def within(self, start, end, category) -> float:
        return sum(max(0.0, min(e, end) - max(s, start)) for s, e, c, _ in self.segments if c == category)


def _t(e: dict, key: str = "t") -> Optional[float]:
    v = e.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def attempt_of(e: dict, by_requeues: bool = False) -> Optional[int]:
    """The attempt that emitted the event, as the training module says it (train/insight.py): its SLURM requeue
    count + 1 where a restart is a requeue of one script (`by_requeues`), else kit's attempt number; None for an
    event that does not say (a user's own script): the time window decides."""
    if by_requeues and isinstance(e.get("sr"), int):
        return e["sr"] + 1
    a = e.get("a")
    return a if isinstance(a, int) and not isinstance(a, bool) else None


def assign(attempts: list, events: list, by_requeues: bool = False) -> None:
    """Each event into the attempt that emitted it; an event that does not say into the attempt whose window holds
    it (the latest that started before it)."""
    numbers = {a.number: a for a in attempts}
    for e in events:
        home = numbers.get(attempt_of(e, by_requeues))
        if home is None:
            t = _t(e)
            for a in attempts:
                if a.start - SLACK <= t <= a.end + SLACK:
                    home = a
        if home is not None:
            (home.sections if e["e"] == "sections" else home.events).append(e)


def _first(events, name) -> Optional[dict]:
    return next((e for e in events if e["e"] == name), None)


def _loops(ev: list) -> list:
    """The attempt's training loops in order (a pretrain phase, then fine-tuning: train/pretrain.py), each as
    [its `train` event, the `end` of the same phase that closed it, or None]. The events name their phase."""
    loops: list = []
    for e in ev:
        if e["e"] == "train":
            loops.append([e, None])
        elif e["e"] == "end" and loops and loops[-1][1] is None and e.get("phase") == loops[-1][0].get("phase"):
            loops[-1][1] = e
    return loops


def _paint_attempt(p: Painter, a: Attempt, formed: Optional[float]) -> Optional[float]:
    """The attempt's time by phase; returns when its training loop ended or stopped being seen (None: no
    training reported)."""
    ev = a.events
    clamp = lambda t: None if t is None else min(max(t, a.start), a.end)  # noqa: E731
    imported, world = clamp(_t(_first(ev, "imported") or {})), clamp(_t(_first(ev, "world") or {}))
    loops = _loops(ev)
    loop = clamp(_t(loops[0][0])) if loops else None
    if loop is None:  # nothing reported (another program), or it died before training
        upto = world or formed or imported
        p.paint(a.start, clamp(upto) or a.end, STARTUP, a.number)
        if upto is not None:
            failed = a.state in (RunState.FAILED, RunState.LOST)
            after = DETECTION if ev and failed else UNREPORTED
            # An earlier attempt had finished the run: this one found its outputs and ended (train/resume.py).
            p.paint(clamp(upto), a.end, WRAP_UP if _first(ev, "finished") else after, a.number)
        return None
    done = loops[-1][1]  # the last loop's end: an earlier phase's end is no end of the training
    seen = [x for e in ev for x in (_t(e), _t(e, "t1")) if x is not None]
    stop = clamp(_t(done)) if done else clamp(max(seen))
    p.paint(a.start, imported or world or loop, STARTUP, a.number)
    p.paint(imported or world or loop, world or loop, RENDEZVOUS, a.number)
    p.paint(world or loop, loop, STARTUP, a.number)
    p.paint(loop, stop, TRAINING, a.number)
    for (_, ended), (nxt, _) in zip(loops, loops[1:]):  # between phases: the next phase's set-up
        p.paint(clamp(_t(ended or {})), clamp(_t(nxt)), STARTUP, a.number)
    p.paint(stop, a.end, DETECTION if not done and a.state in (RunState.FAILED, RunState.LOST) else WRAP_UP, a.number)
    for name, category in (("restore", RESTORE), ("save", SAVE), ("eval", EVAL), ("test", EVAL)):
        for e in ev:
            if e["e"] == name:
                p.paint(clamp(_t(e, "t0")), clamp(_t(e, "t1")), category, a.number)
    return stop


def _kept_until(a: Attempt, restored: Optional[dict]) -> Optional[float]:
    """When the attempt's last kept progress was made: the end of its save of the step (in the phase) the next
    attempt restored (None: all of it was kept; the attempt's own loop start: none of it)."""
    if restored is None:
        return None
    saves = [
        e
        for e in a.events
        if e["e"] == "save" and e.get("step") == restored.get("step") and e.get("phase") == restored.get("phase")
    ]
    if saves:
        return _t(saves[-1], "t1")
    return _t(_first(a.events, "train") or {})


def report(
    created: float, ended: float, attempts: list, events: list, marks: list, by_requeues: bool = False
) -> Report:
    """`attempts`: Attempt windows from the record (oldest first); `events`: the training module's, every rank;
    `marks`: the record's timeline (world formed, a SLURM job's queue moves); `by_requeues`: the backend restarts a
    run by requeueing one script (SLURM), whose events number their attempt by the requeue count."""
    assign(attempts, [e for e in events if e.get("r", 0) == 0 or e["e"] == "sections"], by_requeues)
    p = Painter()
    p.paint(created, attempts[0].start if attempts else ended, STARTUP)
    for before, after in zip(attempts, attempts[1:]):
        p.paint(before.end, after.start, RESTART, after.number)
    reported = False
    stops = {}
    for a in attempts:
        stops[a.number] = _paint_attempt(p, a, _formed(marks, a.number))
        reported |= stops[a.number] is not None
    failures = []
    for i, a in enumerate(attempts):
        nxt = attempts[i + 1] if i + 1 < len(attempts) else None
        restored = _first(nxt.events, "restore") if nxt else None
        stop = stops[a.number]
        if a.state == RunState.SUCCEEDED or stop is None:
            continue
        if nxt is None and a.state in (RunState.PREEMPTED, RunState.RUNNING, AttemptEnd.STILL_RUNNING):
            continue
        if nxt is not None and _first(nxt.events, "finished"):  # it had finished the run: nothing was lost
            continue
        kept = restored if restored else (None if nxt else _last_save(a))
        step = kept.get("step") if kept else (0 if nxt else None)
        cut = _kept_until(a, kept) if step else _t(_first(a.events, "train") or {})
        lost_before = p.total(LOST)
        p.paint(max(cut or a.start, a.start), stop, LOST, a.number, only=TRAINING)
        resumed = _t(_first(nxt.events, "first_step") or {}) if nxt else None
        failures.append(
            {
                "attempt": a.number,
                "cause": a.cause,
                "failed_at": stop,
                "lost_s": round(p.total(LOST) - lost_before, 3),
                "restored_step": step if nxt else None,
                "resumed_after_s": round(resumed - stop, 3) if resumed else None,
            }
        )
    restarts = [
        split(
            a.number,
            stops[a.number],
            a.noticed_at,
            a.nodes_ended_at,
            a.end,
            b.number,
            b.events,
            _formed(marks, b.number),
            a.restart,
        )
        for a, b in zip(attempts, attempts[1:])
    ]
    if attempts:
        _paint_queue(p, marks, attempts[0].start)
    straggler = _straggler(attempts)
    training = p.total(TRAINING)
    badput = {c: round(p.total(c), 3) for c in BADPUT}
    if straggler:
        badput[STRAGGLER] = round(min(straggler["lost_s"], training), 3)
    first = next((_t(e) for a in attempts for e in a.events if e["e"] == "first_step"), None)
    return Report(
        total_s=round(ended - created, 3),
        goodput_s=round(training - badput[STRAGGLER], 3) if reported else None,
        badput={c: v for c, v in badput.items() if v > 0},
        time_to_first_step_s=(round(first - created, 3) if first else None),
        attempts=failures,
        segments=[list(s) for s in p.segments],
        straggler=straggler,
        unreported_s=round(p.total(UNREPORTED), 3),
        restarts=restarts,
    )


def _formed(marks: list, number: int) -> Optional[float]:
    """When kit saw attempt `number`'s world form (the record's timeline), if it did."""
    return next((m["at"] for m in marks if m["event"] == "world formed" and m.get("attempt") == number), None)


def _last_save(a: Attempt) -> Optional[dict]:
    saves = [e for e in a.events if e["e"] == "save"]
    return saves[-1] if saves else None


def _paint_queue(p: Painter, marks: list, first_start: float) -> None:
    """A SLURM job's waits (the record's timeline): from its submission (its first attempt's start) or a requeue
    to running."""
    marks = sorted((m for m in marks if m.get("at") is not None), key=lambda m: m["at"])
    waiting = first_start if any(m["event"] == RunState.RUNNING for m in marks) else None
    for m in marks:
        if m["event"] in (RunState.PENDING, RunState.REQUEUED) and waiting is None:
            waiting = m["at"]
        elif m["event"] == RunState.RUNNING and waiting is not None:
            p.paint(waiting, m["at"], QUEUE)
            waiting = None


def _straggler(attempts: list) -> Optional[dict]:
    """What the slowest rank cost over the run (insight/stragglers.py on every section report), and who it was."""
    lost, named = 0.0, None
    for a in attempts:
        if not a.sections:
            continue
        world = len({e["r"] for e in a.sections if isinstance(e.get("r"), int)})
        watch = Stragglers(world)
        for e in sorted(a.sections, key=lambda e: e["t"]):
            found = watch.feed(e)
            named = named or found
        lost += watch.lost_s
    if not lost and named is None:
        return None
    # Who it was, how much slower, and the machine's load when that slowed it (its words: "machine", "" if not).
    who = {**record_fields(named), "slower": slower(named), "machine": machine(named)} if named else {}
    return {**who, "lost_s": round(lost, 3)}


__all__ = ["Attempt", "Report", "report", "Painter", "BADPUT", "TRAINING", "UNREPORTED"]

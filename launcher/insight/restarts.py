"""A restart phase by phase (pure): the gap from an attempt's failure to the restarted world's first step, each
moment of it in one named phase, so that the phases add up to the gap exactly (in whole milliseconds).

The phases, each ending at a moment kit or the training module recorded:
* detect: the failure -> kit saw it (a node's end or a watch's verdict: the record's attempts list, `noticed_at`).
  The failure's moment is the world's last report of training (the training module reports progress every 0.5 s,
  train/insight.py), which a rank's death follows by up to that much; kit has no earlier sign of the death. An
  attempt that reported no training has only kit's own moment: its detect is 0 and says so.
* stop: -> every node of the failed world ended (`nodes_ended_at`: the others settled or were stopped).
* relaunch: -> the new attempt's main process started (the training module's `start`): kit records the end,
  plans the attempt again, checks and starts the nodes, their launchers meet and start the ranks.
* imports: -> its imports done (`imported`).
* rendezvous: -> its world formed (`world`; else kit's own "world formed" mark).
* set-up: -> its checkpoint restore began (else its training loop began): model, data, optimizer built.
* restore: the checkpoint's load (`restore`: t0 -> t1); 0 when nothing was restored.
* first step: -> the new attempt's first training step (`first_step`).
A moment nobody recorded (a job that reports nothing, a SLURM job whose nodes kit does not follow) joins the phases
on either side of it into one ("detect and stop"); a moment out of order (clocks of different hosts) is taken as the
one before it, so a phase is never negative. kit's moments are its own clock, the training module's are the main
process's host's.

`path`: how the world started again (states.RestartPath), as the record's attempts list says; records from before
it was kept say nothing and were full restarts."""

from typing import Optional

from launcher.states import RestartPath

DETECT, STOP, RELAUNCH, IMPORTS = "detect", "stop", "relaunch", "imports"
RENDEZVOUS, SETUP, RESTORE, FIRST_STEP = "rendezvous", "set-up", "restore", "first step"
PHASES = (DETECT, STOP, RELAUNCH, IMPORTS, RENDEZVOUS, SETUP, RESTORE, FIRST_STEP)
# Where the failure's moment came from (the start of detect).
FROM_TRAINING, FROM_KIT, FROM_END = (
    "its last training report",
    "kit saw it (no training reported)",
    "the attempt's recorded end (nothing earlier recorded)",
)


def _t(e: Optional[dict], key: str = "t") -> Optional[float]:
    v = (e or {}).get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _first(events: list, name: str) -> Optional[dict]:
    return next((e for e in events if e["e"] == name), None)


def joined(names: list) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def split(
    number: int,
    failed_at: Optional[float],
    noticed_at: Optional[float],
    nodes_ended_at: Optional[float],
    attempt_end: float,
    nxt_number: int,
    nxt_events: list,
    world_mark: Optional[float] = None,
    path: str = "",
) -> dict:
    """The restart after attempt `number` (its last training report `failed_at`, kit's moments, its recorded end)
    into attempt `nxt_number` (its main process's events, kit's "world formed" mark for it). `gap_s` and `phases`
    are None and [] when the new attempt reported no first step (it failed too, or reports nothing)."""
    start, source = (
        (failed_at, FROM_TRAINING)
        if failed_at is not None
        else (noticed_at, FROM_KIT)
        if noticed_at is not None
        else (attempt_end, FROM_END)
    )
    first = _t(_first(nxt_events, "first_step"))
    phases: list = []
    out = {
        "attempt": number,
        "to_attempt": nxt_number,
        "path": path or RestartPath.FULL.value,
        "failed_at": start,
        "failure_from": source,
        "first_step_at": first,
        "gap_s": None,
        "phases": phases,
    }
    if first is None:
        return out
    restore = _first(nxt_events, "restore")
    began = _t(restore, "t0") if restore else _t(_first(nxt_events, "train"))
    ends = {
        DETECT: noticed_at,
        STOP: nodes_ended_at if nodes_ended_at is not None else attempt_end,
        RELAUNCH: _t(_first(nxt_events, "start"), "at"),
        IMPORTS: _t(_first(nxt_events, "imported")),
        RENDEZVOUS: _t(_first(nxt_events, "world")) or world_mark,
        SETUP: began,
        RESTORE: (_t(restore, "t1") if restore else began),
        FIRST_STEP: first,
    }
    ms = lambda t: int(round(t * 1000))  # noqa: E731   whole milliseconds: the phases add up exactly
    at, end, pending = ms(start), max(ms(first), ms(start)), []
    for name in PHASES:
        pending.append(name)
        if ends[name] is None:
            continue
        to = min(max(ms(ends[name]), at), end)
        phases.append(
            {
                "phase": joined(pending),
                "s": (to - at) / 1000,
                "from": at / 1000,
                "to": to / 1000,
                **({"note": "nothing restored"} if name == RESTORE and not restore else {}),
            }
        )
        at, pending = to, []
    out["gap_s"] = (end - ms(start)) / 1000
    return out


__all__ = [
    "split",
    "PHASES",
    "DETECT",
    "STOP",
    "RELAUNCH",
    "IMPORTS",
    "RENDEZVOUS",
    "SETUP",
    "RESTORE",
    "FIRST_STEP",
    "FROM_TRAINING",
    "FROM_KIT",
    "FROM_END",
    "joined",
]

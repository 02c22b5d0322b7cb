"""A run's report, for both faces (`kit report RUN`, the API's Run.report()): its record (status.json, its timeline
and attempts) and its node logs (the training module's events) made into one timeline, goodput and the badput
breakdown (insight/goodput.py)."""

import time
from typing import Optional

from launcher.backends import registry
from launcher.core.describe import attempts as attempt_rows
from launcher.core.lookup import state_now
from launcher.core.waiting import end_code
from launcher.errors import KitError
from launcher.insight.events import record_events
from launcher.insight.goodput import Attempt, report
from launcher.trust import untrusted
from launcher.states import QUEUED

# The training module's events, as the timeline names them.
SAID = {
    "start": "process started",
    "imported": "imports done",
    "world": "world formed (process group)",
    "train": "training loop started",
    "first_step": "first step",
    "restore": "checkpoint restored",
    "save": "checkpoint saved",
    "eval": "evaluation",
    "test": "final test",
    "end": "training loop ended",
    "finished": "found the run finished by an earlier attempt",
}


def report_run(record, png: Optional[str] = None) -> dict:
    """The report of the run whose record this is, its node logs first brought up to date where they are written
    elsewhere (a login host; only for a trusted record: kit acts on no other); `png`: the timeline drawn there."""
    record.read_status(strict=True)
    state, _ = state_now(record)
    status = record.read_status()
    if untrusted(record) is None:
        registry.backend(status.backend).fetch_logs(record, status)
    data = build(record, status, state)
    if png:
        draw_png(data, png)
    return data


def draw_png(data: dict, png: str) -> None:
    """The report's timeline drawn into the file `png`; one line (KitError) naming it when it cannot be written."""
    from launcher.insight.report_png import draw

    try:
        draw(data, png)
    except OSError as e:
        raise KitError(
            f"cannot write the timeline to {png}: {e.strerror or e}; give a --png path in a directory "
            f"that exists and that you may write"
        ) from None


def build(record, status, state: str, now: Optional[float] = None) -> dict:
    now = time.time() if now is None else now
    code = end_code(state, status)
    rows = attempt_rows(status, state, code, now)
    ended = status.finished_at or now
    # The first attempt's window opens at the submission: a scheduler's queue wait (the timeline's marks) and the
    # checks before the world started are its time, not the run's before it.
    submitted = status.submitted_at or status.created_at
    # The restart's moments kit recorded on each ended attempt (backends/attempts.py), by attempt number.
    kept = {a.get("attempt"): a for a in status.attempts}
    windows = [
        Attempt(
            a["attempt"],
            (submitted if i == 0 and submitted else a["started_at"]) or status.created_at or now,
            a["finished_at"] or ended,
            a["state"] or "?",
            a["cause"] or "",
            noticed_at=kept.get(a["attempt"], {}).get("noticed_at"),
            nodes_ended_at=kept.get(a["attempt"], {}).get("nodes_ended_at"),
            restart=kept.get(a["attempt"], {}).get("restart") or "",
        )
        for i, a in enumerate(rows)
    ]
    events = record_events(record.path)
    marks = [dict(m) for m in status.timeline]  # a SLURM job's own requeues are attempts of their own already
    created = status.created_at or (windows[0].start if windows else now)
    r = report(created, ended, windows, events, marks, registry.placement(status.backend).restarts_in_place)
    return {
        "run_id": status.run_id,
        "job": status.job,
        "backend": status.backend,
        "state": state,
        "exit_code": code,
        "total_s": r.total_s,
        "goodput_s": r.goodput_s,
        "goodput": None if r.goodput is None else round(r.goodput, 4),
        "badput": r.badput,
        "unreported_s": r.unreported_s,
        "time_to_first_step_s": r.time_to_first_step_s,
        "attempts": [_attempt(a, r.attempts, r.restarts) for a in rows],
        "straggler": r.straggler,
        "timeline": _timeline(status, rows, marks, events),
        "segments": r.segments,
    }


def _attempt(a: dict, failures: list, restarts: list) -> dict:
    """The attempt's row, with what its failure cost and the restart after it, phase by phase (null: none)."""
    failed: dict = next((f for f in failures if f["attempt"] == a["attempt"]), {})
    return {
        **a,
        "lost_s": failed.get("lost_s"),
        "restored_step": failed.get("restored_step"),
        "resumed_after_s": failed.get("resumed_after_s"),
        "restart": next((r for r in restarts if r["attempt"] == a["attempt"]), None),
    }


def _timeline(status, rows: list, marks: list, events: list) -> list:
    """Everything that happened, in time order: what kit recorded and what the main process reported."""
    out = [{"at": status.created_at, "event": "submitted", "attempt": None, "detail": ""}]
    for a in rows:
        out.append({"at": a["started_at"], "event": "attempt started", "attempt": a["attempt"], "detail": ""})
        if a["finished_at"]:
            out.append(
                {
                    "at": a["finished_at"],
                    "event": "attempt ended",
                    "attempt": a["attempt"],
                    "detail": f"{a['state']}" + (f": {a['cause']}" if a["cause"] else ""),
                }
            )
    out += [{**m, "event": "queued" if m["event"] in QUEUED else m["event"]} for m in marks]
    for e in events:
        if e["e"] in SAID and e.get("r", 0) == 0:
            detail = ", ".join(
                x
                for x in (
                    "pretrain" if e.get("phase") == "pretrain" else "",
                    f"step {e['step']}" if "step" in e else "",
                )
                if x
            )
            if "t0" in e and "t1" in e:
                detail = (detail + ", " if detail else "") + f"{e['t1'] - e['t0']:.2f} s"
            out.append(
                {"at": e.get("at", e.get("t0", e["t"])), "event": SAID[e["e"]], "attempt": None, "detail": detail}
            )
    if status.finished_at:
        out.append({"at": status.finished_at, "event": "end", "attempt": None, "detail": status.state})
    return sorted((x for x in out if x["at"] is not None), key=lambda x: x["at"])


__all__ = ["report_run", "build"]

"""`kit report RUN` as text: goodput, the badput breakdown, each attempt (with what a failure cost and the restart
after it, phase by phase), a straggler. A job that did not report its training gets what kit saw, its unreported
time outside badput, and how to report."""

import time

from launcher.insight.goodput import UNREPORTED


def _clock(ts) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else "-"


def _s(v) -> str:
    return "-" if v is None else f"{v:.1f} s"


def report_text(data: dict) -> str:
    total = data["total_s"] or 0.0
    lines = [
        f"run {data['run_id']}  job {data['job']}  backend {data['backend']}  state {data['state']}  wall {total:.1f} s"
    ]
    unreported = data.get("unreported_s") or 0.0
    if data["goodput"] is None:
        lines.append("goodput: unknown: the job did not tell kit when it trained (see the end); what kit saw:")
        lines += _seen(data)
    else:
        lines.append(
            f"goodput {100 * data['goodput']:.1f}% ({data['goodput_s']:.1f} s of training kept, of {total:.1f} s)"
        )
        lines.append(f"time to first step {_s(data['time_to_first_step_s'])}")
    width = max([len(k) + 2 for k in data["badput"]] + ([len(UNREPORTED)] if unreported else []) + [0])
    if data["badput"]:
        lines.append(f"badput{'':<{width - 6}}  seconds   share")
        for cause, seconds in data["badput"].items():
            lines.append(_row("  " + cause, seconds, total, width))
    if unreported:
        # Neither goodput nor badput: kit cannot tell the job's training from anything else it did.
        lines.append(_row(UNREPORTED, unreported, total, width) + "  (neither goodput nor badput)")
    lines.append("attempts")
    for a in data["attempts"]:
        code = "" if a["exit_code"] is None else f", exit {a['exit_code']}"
        why = f": {a['cause']}" if a["cause"] else ""
        lines.append(
            f"  {a['attempt']}  {_clock(a['started_at'])} -> {_clock(a['finished_at'])}  {a['state']}{code}{why}"
        )
        if a.get("lost_s") or a.get("restored_step") is not None:
            since = f" since its checkpoint of step {a['restored_step']}" if a.get("restored_step") else ""
            resumed = (
                f"; training resumed {a['resumed_after_s']:.1f} s after the failure"
                if a.get("resumed_after_s") is not None
                else ""
            )
            lines.append(f"     lost {a['lost_s']:.1f} s of progress{since}{resumed}")
        if a.get("restart"):
            lines += _restart(a["restart"])
    s = data["straggler"]
    if s:
        who = f"rank {s['rank']} (node {s['node']}), {s['slower']}; " if "rank" in s else ""
        who += f"{s['machine']}; " if s.get("machine") else ""
        lines.append(f"straggler: {who}the world waited {s['lost_s']:.1f} s for its slowest rank")
    if data["goodput"] is None:
        lines += HOW_TO_REPORT
    return "".join(line + "\n" for line in lines)


# How a job tells kit when it trains, in kit's words: the lines kit reads from the node logs (insight/events.py).
HOW_TO_REPORT = [
    "for goodput, have the job's main process (rank 0) print to stdout, flushed, when its training loop starts "
    "and ends:",
    '  kit-insight: {"e": "train", "t": SECONDS}   and   kit-insight: {"e": "end", "t": SECONDS}',
    "(SECONDS: time.time() then; kit keeps these lines off the console; more events are in kit's docs, \"The "
    'timeline and the goodput report")',
]


def _restart(r: dict) -> list:
    """The restart after an attempt, phase by phase (insight/restarts.py). Shown to 0.01 s, each phase the change in
    the running total so that the shown phases add up to the shown gap."""
    head = f"     restart -> attempt {r['to_attempt']} ({r['path']} restart): "
    if r["gap_s"] is None:
        return [head + f"attempt {r['to_attempt']} reported no first step"]
    out = [head + f"{r['gap_s']:.2f} s from the failure ({r['failure_from']}) to its first step"]
    width = max(len(p["phase"]) for p in r["phases"])
    done = 0.0
    for p in r["phases"]:
        shown = round(done + p["s"], 2) - round(done, 2)
        done += p["s"]
        note = f"  ({p['note']})" if p.get("note") else ""
        out.append(f"       {p['phase']:<{width}}  {shown:>6.2f} s{note}")
    return out


def _row(name: str, seconds: float, total: float, width: int) -> str:
    share = 100 * seconds / total if total else 0.0
    return f"{name:<{width}}  {seconds:>7.1f}  {share:>5.1f}%"


def _seen(data: dict) -> list:
    """The run's timeline as kit saw it, from its submission: queue, attempts, the world formed, restarts, the end."""
    entries = [e for e in data.get("timeline") or [] if e.get("at") is not None]
    if not entries:
        return []
    origin = entries[0]["at"]
    several = len(data["attempts"]) > 1
    out = []
    for e in entries:
        what, n = e["event"], e.get("attempt")
        if what.startswith("attempt ") and n:
            what = f"attempt {n} {what[len('attempt ') :]}"  # attempt 2 started
        elif several and n:
            what += f" (attempt {n})"
        what += f": {e['detail']}" if e.get("detail") else ""
        out.append(f"  {_clock(e['at'])}  {e['at'] - origin:>+7.1f} s  {what}")
    return out


__all__ = ["report_text"]

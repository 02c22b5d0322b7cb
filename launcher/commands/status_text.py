"""`kit status RUN` as text, rendered from the run's data (launcher/core/describe.py), so the text and `--json` say the
same: state, duration, every attempt of a restarted run, nodes, the first failure, the exit code."""

import time

from launcher.render.text import duration


def when(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _attempt(a: dict) -> str:
    """`attempt 1  2026-12-06 21:40:01 -> 21:40:12 (11s)  failed, exit 137: node 1 ... (killed by SIGKILL)`."""
    start, end = a["started_at"], a["finished_at"]
    same_day = start and end and time.localtime(start)[:3] == time.localtime(end)[:3]
    ended = (when(end)[11:] if same_day else when(end)) if end else "now"
    code = "" if a["exit_code"] is None else f", exit {a['exit_code']}"
    why = f": {a['cause']}" if a["cause"] else ""
    return f"  attempt {a['attempt']}  {when(start)} -> {ended} ({duration(a['duration_s'])})  {a['state']}{code}{why}"


def status_text(data: dict) -> str:
    job_id = f"  slurm job {data['job_id']}" if data["job_id"] else ""
    lines = [
        f"run {data['run_id']}  job {data['job']}  backend {data['backend']}{job_id}  state {data['state']}",
        f"  started {when(data['times']['started_at'])}  duration {duration(data['times']['duration_s'])}  "
        f"record {data['record']}",
    ]
    if data["note"]:
        lines.append(f"  {data['note']}")
    if len(data["attempts"]) > 1:  # a restarted run: each start of the world, and how it ended
        lines += [_attempt(a) for a in data["attempts"]]
    for n in data["nodes"]:
        code = "-" if n["exit_code"] is None else n["exit_code"]
        by_kit = " (stopped by kit)" if n.get("stopped_by_kit") else ""
        lines.append(f"  node {n['node']}  host {n['host']}  pid {n['pid'] or '-'}  exit {code}{by_kit}")
    if data.get("straggler"):
        lines.append(f"  straggler: {data['straggler']['line']}")
    if data["failure"]:
        lines.append(f"  first failure: {data['failure']['cause']}")
    if data["exit_code"] is not None:
        lines.append(f"exit code {data['exit_code']}")
    return "".join(line + "\n" for line in lines)


__all__ = ["status_text", "when"]

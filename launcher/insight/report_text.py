"""`kit report RUN` as text: goodput, the badput breakdown, each attempt (with what a failure cost), a straggler."""

import time


def _clock(ts) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else "-"


def _s(v) -> str:
    return "-" if v is None else f"{v:.1f} s"


def report_text(data: dict) -> str:
    total = data["total_s"] or 0.0
    lines = [f"run {data['run_id']}  job {data['job']}  backend {data['backend']}  state {data['state']}  "
             f"wall {total:.1f} s"]
    if data["goodput"] is None:
        lines.append("goodput: unknown (the job reports no training steps; the training module does, see "
                     "train/insight.py); what kit saw is below")
    else:
        lines.append(f"goodput {100 * data['goodput']:.1f}% ({data['goodput_s']:.1f} s of training kept, of "
                     f"{total:.1f} s)")
    lines.append(f"time to first step {_s(data['time_to_first_step_s'])}")
    if data["badput"]:
        width = max(len(k) for k in data["badput"])
        lines.append(f"badput{'':<{width - 4}}  seconds   share")
        for cause, seconds in data["badput"].items():
            share = 100 * seconds / total if total else 0.0
            lines.append(f"  {cause:<{width}}  {seconds:>7.1f}  {share:>5.1f}%")
    lines.append("attempts")
    for a in data["attempts"]:
        code = "" if a["exit_code"] is None else f", exit {a['exit_code']}"
        why = f": {a['cause']}" if a["cause"] else ""
        lines.append(f"  {a['attempt']}  {_clock(a['started_at'])} -> {_clock(a['finished_at'])}  "
                     f"{a['state']}{code}{why}")
        if a.get("lost_s") or a.get("restored_step") is not None:
            since = f" since its checkpoint of step {a['restored_step']}" if a.get("restored_step") else ""
            resumed = (f"; training resumed {a['resumed_after_s']:.1f} s after the failure"
                       if a.get("resumed_after_s") is not None else "")
            lines.append(f"     lost {a['lost_s']:.1f} s of progress{since}{resumed}")
    s = data["straggler"]
    if s:
        who = f"rank {s['rank']} (node {s['node']}), {s['section']} {s['ratio']:.1f}x the fastest rank; " \
            if "rank" in s else ""
        lines.append(f"straggler: {who}the world waited {s['lost_s']:.1f} s for its slowest rank")
    return "".join(line + "\n" for line in lines)


__all__ = ["report_text"]

"""A sweep's trials as one table: parameters, state, metric, duration, the best trial marked. Each trial's state
comes from its own run record, read through its backend (`kit status <trial>` reads it the same way). Printed
by `kit sweep status [S]` (and `kit status S`) as text or JSON, with sweep.png."""

import os
import sys
import time
from typing import Optional

from launcher.errors import KitError
from launcher.render.text import duration, to_json
from launcher.states import RunState, TrialState
from launcher.status import NOT_OVER
from launcher.supervise import tree
from launcher.sweeps import curves, metrics
from launcher.sweeps.plot import write_plot
from launcher.sweeps.record import find_sweep, latest_sweep
from launcher.sweeps.rerun import trial_state
from launcher.sweeps.trials import describe

# A trial that ran as far as the sweep wanted: to its end, or until its pruner stopped it (sweep.early_stopping).
DONE = (RunState.SUCCEEDED, RunState.PRUNED)


def metric_text(value: Optional[float]) -> str:
    return "-" if value is None else f"{value + 0.0:.4f}"  # + 0.0: no "-0.0000"


def _duration(status, state: str) -> Optional[float]:
    start = status.began
    end = status.finished_at or (time.time() if state in NOT_OVER else None)
    return None if not start or not end else max(0.0, end - start)


def _row(trial: dict, run_root: str, data: dict, driver_alive: bool) -> dict:
    path = os.path.join(run_root, trial["run_id"])
    state, status = trial_state(path)
    error = (data.get("errors") or {}).get(trial["run_id"])
    if not status.run_id:
        state = RunState.FAILED if error else (RunState.PENDING if driver_alive else TrialState.NOT_RUN)
    value = None
    if state == RunState.SUCCEEDED:
        found = _found(trial, path, data, status)
        value = None if found is None else metrics.lookup(found, data["spec"]["metric"])
    curve = curves.kept(path)
    return {
        "index": trial["index"],
        "run_id": trial["run_id"],
        "params": trial["params"] or {},
        "state": state,
        "last_step": curve[-1][0] if curve else None,
        "pruned_at": trial.get("pruned_at"),
        "exit_code": status.exit_code if status.run_id else (2 if error else None),
        "metric": value,
        "duration_s": _duration(status, state),
        "error": error,
    }


def _found(trial: dict, path: str, data: dict, status):
    """The trial's metrics file, read as JSON (None: not found, or not JSON)."""
    metrics_file = data["spec"]["metrics_file"]
    found = metrics.trial_metrics(path, data.get("workdir"), trial["output_dir"], metrics_file)
    if found is None:  # written where this machine does not see it (a login host's workdir): ask its backend
        found = metrics.fetch(path, status, trial["output_dir"], metrics_file)
    return found


def metric_problem(record, run_root: str, run_id: Optional[str] = None) -> Optional[str]:
    """sweep.metric checked against one succeeded trial's metrics file (`run_id`'s, else the first succeeded
    trial's, by index): None when it is scored, or when no trial succeeded yet; else the line that names the keys
    the file has (metrics.metric_problem)."""
    data = record.read()
    for trial in data["trials"]:
        if run_id is not None and trial["run_id"] != run_id:
            continue
        path = os.path.join(run_root, trial["run_id"])
        state, status = trial_state(path)
        if state != RunState.SUCCEEDED:
            continue
        where = (
            f"trial {trial['index']}'s {data['spec']['metrics_file']} "
            f"({os.path.join(trial['output_dir'], data['spec']['metrics_file'])})"
        )
        return metrics.metric_problem(_found(trial, path, data, status), data["spec"]["metric"], where)
    return None


def trial_row(record, run_root: str, run_id: str) -> dict:
    data = record.read()
    return _row(next(t for t in data["trials"] if t["run_id"] == run_id), run_root, data, True)


def _best(rows: list, goal: str) -> Optional[dict]:
    scored = [r for r in rows if r["state"] == RunState.SUCCEEDED and r["metric"] is not None]
    if not scored:
        return None
    pick = max if goal == "max" else min
    return pick(scored, key=lambda r: r["metric"])


def _sweep_state(data: dict, rows: list, driver_alive: bool) -> str:
    if driver_alive or any(r["state"] in NOT_OVER for r in rows):
        return RunState.RUNNING
    if data.get("state") == RunState.CANCELLED:
        return RunState.CANCELLED
    if data.get("state") == RunState.RUNNING and data.get("driver_pid"):
        return RunState.LOST  # the driver died; its trials stopped themselves (their pipe from it closed)
    if all(r["state"] in DONE for r in rows):
        return RunState.SUCCEEDED
    if any(r["state"] == TrialState.NOT_RUN for r in rows):
        return "incomplete"
    return RunState.FAILED


def _record_end(record, data: dict, rows: list, state: str) -> None:
    """A sweep with no driver (its trials submitted as one job array) ends when its last trial does, which
    whoever reads it next sees: its record says so from then on (a detached array's sweep.json would say
    "running" for ever otherwise)."""
    if data.get("driver_pid") or data.get("state") != RunState.RUNNING or state in (RunState.RUNNING, RunState.LOST):
        return
    failed = [r for r in rows if r["state"] not in DONE]
    code = 0 if not failed else (failed[0]["exit_code"] or 1)
    record.update(state=state, exit_code=code, finished_at=time.time())


def collect(record, run_root: str) -> dict:
    data = record.read()
    driver = tree.same_process(data.get("driver_pid"), data.get("driver_start"))
    alive = driver is not None and driver.pid != os.getpid()  # the driver's own final table: it is done
    rows = [_row(t, run_root, data, alive) for t in data["trials"]]
    spec = data["spec"]
    best = _best(rows, spec["goal"])
    state = _sweep_state(data, rows, alive)
    _record_end(record, data, rows, state)
    counts: dict = {}
    for r in rows:
        counts[str(r["state"])] = counts.get(str(r["state"]), 0) + 1
    return {
        "sweep_id": data["sweep_id"],
        "job": data.get("job_name"),
        "backend": data.get("backend"),
        "state": state,
        "method": spec["method"],
        "counts": counts,
        "early_stopping": spec.get("early_stopping"),
        "metric": spec["metric"],
        "goal": spec["goal"],
        "parameters": data.get("parameter_names") or list(spec["parameters"]),
        "best": None if best is None else best["run_id"],
        "trials": rows,
        "stopped": data.get("stopped"),
    }


def _table(header: list, rows: list) -> list:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def render_text(view: dict) -> str:
    names = view["parameters"]
    header = ["TRIAL", *names, "STATE", view["metric"], "DURATION", "EXIT"]
    rows = []
    for r in view["trials"]:
        mark = " *" if r["run_id"] == view["best"] else ""
        code = r["exit_code"]
        state = r["state"] if r["state"] != RunState.PRUNED else f"pruned@{r['pruned_at']}"
        rows.append(
            [
                f"{r['index']}{mark}",
                *(str(r["params"].get(n, "-")) for n in names),
                state,
                metric_text(r["metric"]),
                duration(r["duration_s"]),
                "-" if code is None else str(code),
            ]
        )
    lines = [
        f"sweep {view['sweep_id']}  job {view['job']}  backend {view['backend']}  state {view['state']}  "
        f"metric {view['metric']} ({view['goal']})",
        *_table(header, rows),
    ]
    best = next((r for r in view["trials"] if r["run_id"] == view["best"]), None)
    if best is not None:
        params = {n: best["params"][n] for n in names}
        lines.append(
            f"* best: trial {best['index']} (run {best['run_id']}): {describe(params)}; "
            f"{view['metric']} {metric_text(best['metric'])}"
        )
    else:
        lines.append(f"no best trial yet: no succeeded trial has {view['metric']}")
    counts = view.get("counts") or {}
    if counts.get(RunState.PRUNED):
        lines.append(
            "trials: "
            + ", ".join(f"{n} {s}" for s, n in counts.items())
            + " (pruned: stopped early by sweep.early_stopping, not failures)"
        )
    for r in view["trials"]:
        if r["error"] and r["state"] == RunState.FAILED:
            lines.append(f"trial {r['index']} did not start: {r['error']}")
    if view.get("stopped"):
        lines.append(view["stopped"])
    return "\n".join(lines) + "\n"


def render_json(view: dict) -> str:
    return to_json(view)


# `kit sweep status [S]` (and `kit status S`): the table of a sweep's trials, or JSON, and sweep.png.


def print_status(run_root: str, sweep_id, fmt: str = "text") -> int:
    sweep_id = sweep_id or latest_sweep(run_root)
    if sweep_id is None:
        raise KitError(f"no sweeps under {run_root}/ yet; start one with `kit submit JOB --sweep FILE`")
    record = find_sweep(run_root, sweep_id)
    view = collect(record, os.path.dirname(record.path))
    sys.stdout.write(render_json(view) if fmt == "json" else render_text(view))
    sys.stdout.flush()
    write_plot(record, view)
    return 0

"""`kit runs / status / cancel`: read and act on run records (`kit logs` lives in logs.py). Runs are found
through kit's index of this user's runs (run_index.py) or under --run-root."""

import json
import os
import re
import sys
import time

from launcher import records
from launcher.commands.status_text import status_text, when as _when
from launcher.core.cancel import cancel_run
from launcher.core.describe import describe
from launcher.errors import KitError
from launcher.render.text import duration
from launcher.core.lookup import all_roots, find_record, resolve_id, root_of, state_now
from launcher.status import ACTIVE, FINAL, NOT_OVER, QUEUED
from launcher.sweeps.record import find_sweep, is_sweep, list_sweeps, state_now as sweep_state
from launcher.core.waiting import status_code
from launcher.states import RunState, TrialState


_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since(text: str, now: float) -> float:
    """--since WHEN as a time: `30m`, `6h`, `2d` ago, or a local date (and time)."""
    m = _AGO.match(text.strip())
    if m:
        return now - float(m.group(1)) * _UNIT[m.group(2)]
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            return time.mktime(time.strptime(text.strip(), fmt))
        except ValueError:
            continue
    raise KitError(f"--since {text}: expected a span like 30m, 6h, 2d or a date like 2026-12-01 "
                   f"or '2026-12-01 08:00'")


def _rows(roots: list[str], now: float) -> list[dict]:
    rows = []
    for root in roots:
        for run_id, st in records.list_records(root):
            state, _ = state_now(records.RunRecord(os.path.join(root, run_id)), st)
            start = st.began
            end = st.finished_at if state not in ACTIVE + QUEUED else now
            rows.append({"id": run_id, "backend": st.backend, "state": state, "exit": st.exit_code,
                         "created": st.created_at or 0, "started": start,
                         "duration": (end - start) if start and end else None,
                         "job_id": st.scheduler_job_id})
        for sweep_id, data in list_sweeps(root):   # its trials are runs <sweep>-t<N> of their own
            state = sweep_state(data)
            start, end = data.get("created_at"), data.get("finished_at") or (now if state == RunState.RUNNING else None)
            rows.append({"id": sweep_id, "backend": "sweep", "state": state, "exit": data.get("exit_code"),
                         "created": start or 0, "started": start,
                         "duration": (end - start) if start and end else None,
                         "job_id": data.get("array_job_id")})
    return rows


def runs_cmd(args) -> int:
    now = time.time()
    roots = [args.run_root] if args.run_root is not None else all_roots()
    states = NOT_OVER + FINAL + (RunState.LOST, RunState.CORRUPT, TrialState.ARRAY)
    if args.state and args.state not in states:
        raise KitError(f"--state {args.state}: a run is one of {', '.join(states)}")
    rows = _rows(roots, now)
    if args.state:
        rows = [r for r in rows if r["state"] == args.state]
    if args.backend:
        rows = [r for r in rows if r["backend"] == args.backend]
    if args.since:
        cutoff = since(args.since, now)
        rows = [r for r in rows if r["created"] >= cutoff]
    if not rows:
        filtered = args.state or args.backend or args.since
        print("no runs match" if filtered else
              f"no runs under {args.run_root}/" if args.run_root is not None else "no runs yet; start one with "
              "`kit submit`")
        return 0
    rows.sort(key=lambda r: r["created"], reverse=True)   # newest first
    width = max(44, *(len(r["id"]) + 1 for r in rows))
    print(f"{'RUN':<{width}} {'BACKEND':<8} {'STATE':<10} {'EXIT':>4}  {'STARTED':<19}  DURATION")
    for r in rows:
        code = "" if r["exit"] is None else r["exit"]
        print(f"{r['id']:<{width}} {r['backend']:<8} {r['state']:<10} {code:>4}  {_when(r['started']):<19}  "
              f"{duration(r['duration'])}")
    return 0


def status(args) -> int:
    """The run's state, attempts, nodes and first failure (--json: the same as data, launcher/core/describe.py); the
    exit code tells the state (0: succeeded or not over yet; else the run's exit code, as `kit wait` gives)."""
    run_id = resolve_id(args.run_root, args.run_id)
    root = root_of(args.run_root, run_id)
    if is_sweep(root, run_id):
        from launcher.sweeps.status import print_status
        return print_status(root, run_id, "json" if getattr(args, "json", False) else "text")
    record = find_record(args.run_root, run_id)
    record.read_status(strict=True)
    state, note = state_now(record)
    # A backend may have recorded what it just learnt (a SLURM job's hosts, end state and exit codes).
    st = record.read_status()
    data = describe(record, st, state, note)
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2))
    else:
        sys.stdout.write(status_text(data))
    return status_code(state, st)


def cancel(args) -> int:
    args.run_id = resolve_id(args.run_root, args.run_id)
    root = root_of(args.run_root, args.run_id)
    if is_sweep(root, args.run_id):
        from launcher.sweeps.cancel import cancel_sweep
        print(cancel_sweep(find_sweep(root, args.run_id)))
        return 0
    print(cancel_run(find_record(args.run_root, args.run_id)))
    return 0

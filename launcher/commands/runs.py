"""`kit runs / status / cancel / report`: read and act on run records (`kit logs` lives in logs.py). Runs are found
through kit's index of this user's runs (run_index.py) or under --run-root."""

import json
import re
import sys
import time

from launcher.commands.status_text import status_text
from launcher.commands.status_text import when as _when
from launcher.core.listing import PAGE, find_record, listing
from launcher.core.lookup import resolve_id, root_of, state_now
from launcher.core.waiting import status_code
from launcher.errors import KitError
from launcher.render.text import duration
from launcher.states import RunState, TrialState
from launcher.status import FINAL, NOT_OVER
from launcher.sweeps import record as _sweep_record  # noqa: F401  (registers the sweep's reader with the index)
from launcher.sweeps.record import find_sweep, is_sweep

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
    raise KitError(f"--since {text}: expected a span like 30m, 6h, 2d or a date like 2026-12-01 or '2026-12-01 08:00'")


def runs_cmd(args) -> int:
    """The newest runs and sweeps (a page: --limit N, --all), newest first, from kit's index (core/listing.py)."""
    now = time.time()
    states = NOT_OVER + FINAL + (RunState.LOST, RunState.CORRUPT, TrialState.ARRAY)
    if args.state and args.state not in states:
        raise KitError(f"--state {args.state}: a run is one of {', '.join(states)}")
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        raise KitError(f"--limit {limit}: the number of runs to show, at least 1 (or --all for every one)")
    cutoff = since(args.since, now) if args.since else None
    filtered = args.state or args.backend or args.since

    def keep(r: dict) -> bool:
        return (
            (not args.state or r["state"] == args.state)
            and (not args.backend or r["backend"] == args.backend)
            and (cutoff is None or r["created"] >= cutoff)
        )

    shown = None if getattr(args, "all", False) else limit or PAGE
    rows, total = listing(args.run_root, now, keep if filtered else None, shown)
    if not rows:
        print(
            "no runs match"
            if filtered
            else f"no runs under {args.run_root}/"
            if args.run_root is not None
            else "no runs yet; start one with `kit submit`"
        )
        return 0
    width = max(44, *(len(r["id"]) + 1 for r in rows))
    print(f"{'RUN':<{width}} {'BACKEND':<8} {'STATE':<10} {'EXIT':>4}  {'STARTED':<19}  DURATION")
    for r in rows:
        code = "" if r["exit"] is None else r["exit"]
        print(
            f"{r['id']:<{width}} {r['backend']:<8} {r['state']:<10} {code:>4}  {_when(r['started']):<19}  "
            f"{duration(r['duration'])}"
        )
    if total > len(rows):
        print(
            f"(the newest {len(rows)} of {total}{' that match' * bool(filtered)}; `kit runs --all` for every one, "
            f"--limit N for the newest N)"
        )
    return 0


def status(args) -> int:
    """The run's state, attempts, nodes and first failure (--json: the same as data, launcher/core/describe.py); the
    exit code tells the state (0: succeeded or not over yet; else the run's exit code, as `kit wait` gives)."""
    run_id = resolve_id(args.run_root, args.run_id)
    root = root_of(args.run_root, run_id)
    if is_sweep(root, run_id):
        from launcher.sweeps.table import print_status

        return print_status(root, run_id, "json" if getattr(args, "json", False) else "text")
    from launcher.core.describe import describe  # here, not at the top: `kit runs` needs none of it

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
    from launcher.core.waiting import cancel_run

    print(cancel_run(find_record(args.run_root, args.run_id)))
    return 0


# `kit report RUN [--json] [--png FILE]`: where a run's time went: goodput, the badput breakdown, each attempt and
# what a failure cost, from its record (core/report.py).


def report(args) -> int:
    from launcher.core.listing import find_record
    from launcher.core.report import draw_png, report_run
    from launcher.insight.report_text import report_text

    data = report_run(find_record(args.run_root, args.run_id))
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        sys.stdout.write(report_text(data))
    sys.stdout.flush()
    if args.png:  # after the report: a path that cannot be written costs the drawing only (one line, exit 2)
        draw_png(data, args.png)
        if not args.json:
            print(f"timeline drawn in {args.png}")
    return 0


def add_report_args(sub, record_args) -> None:
    p = sub.add_parser("report", help="where a run's time went: goodput, badput by cause, attempts, stragglers")
    p.add_argument("run_id", nargs="?", help="run id (default: the latest run); its first characters will do")
    p.add_argument("--json", action="store_true", help="the same as data, with the whole timeline")
    p.add_argument("--png", metavar="FILE", help="draw the timeline into FILE (a PNG)")
    record_args(p)

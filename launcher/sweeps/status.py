"""`kit sweep status [S]` (and `kit status S`): the table of a sweep's trials, or JSON, and sweep.png."""

import os
import sys

from launcher.errors import KitError
from launcher.sweeps.plot import write_plot
from launcher.sweeps.record import find_sweep, latest_sweep
from launcher.sweeps.table import collect, render_json, render_text


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

"""`kit wait RUN [--timeout S]`: block until a run of any backend ends (one followed by `kit submit`, a detached
one, a SLURM job) and exit with its exit code; its outcome line on stderr."""

import os
import sys

from launcher.errors import KitError
from launcher.core.listing import find_record
from launcher.core.lookup import resolve_id, root_of
from launcher.trust import require_trusted
from launcher.supervise.failure import outcome_line
from launcher.sweeps.record import is_sweep
from launcher.core.waiting import TIMEOUT_CODE, StillGoing, end_code, wait_end
from launcher.states import RunState


def wait(args) -> int:
    if args.timeout is not None and not args.timeout >= 0:  # not NaN either
        raise KitError(f"--timeout {args.timeout:g}: give seconds, 0 or more")
    run_id = resolve_id(args.run_root, args.run_id)
    if is_sweep(root_of(args.run_root, run_id), run_id):
        raise KitError(
            f"{run_id} is a sweep; kit wait takes one run (a trial: {run_id}-t0, ...); "
            f"kit sweep status {run_id} shows them all"
        )
    record = find_record(args.run_root, run_id)
    recorded = record.read_status(strict=True)
    name = recorded.run_id or run_id or os.path.basename(record.path)  # the latest run's, if its record has none
    if not recorded.over:
        require_trusted(record)  # waiting asks its backend (hosts, a login host): never for a stranger's record
    try:
        state, note = wait_end(record, args.timeout)
    except StillGoing as e:
        print(
            f"kit: run {name} still {e.state} after {args.timeout:g} s (--timeout); exit code {TIMEOUT_CODE}, "
            f"the run goes on",
            file=sys.stderr,
        )
        return TIMEOUT_CODE
    except KeyboardInterrupt:  # not kit's "nothing was started": the run was never ours to stop
        print(f"\nkit: stopped waiting; run {name} goes on", file=sys.stderr)
        return 130
    status = record.read_status()
    code = end_code(state, status)
    assert code is not None  # wait_end returns once the run is over
    if state == RunState.LOST:
        print(f"kit: run {name} lost{f': {note}' if note else ''} (exit code {code})", file=sys.stderr)
    else:
        print(outcome_line(name, state, code, status.failure), file=sys.stderr)
    return code

"""A run that goes on without the kit that started it (`kit submit --detach`, the Python API): a supervisor
process of its own (supervise/spawned.py: a fresh interpreter in a session of its own) runs the attempts of the
plan it is handed, and writes its console into the record (console.log). The plan, the backend's binding and the
record's path travel pickled on the child's stdin (the plan holds secret values that no file or command line may
carry)."""

import logging
import os
import sys
import time

from launcher.errors import KitError, render
from launcher.planning.model import LaunchPlan
from launcher.records import RunRecord
from launcher.supervise import spawned, tree
from launcher.states import RunState

log = logging.getLogger(__name__)

CONSOLE = "console.log"


def spawn(backend: str, binding, plan: LaunchPlan, record: RunRecord, base_dir: str, inputs=None) -> int:
    """Start the supervisor; record its pid (so `kit status` tells a dead one from a live one) and return it."""
    try:
        proc = spawned.start("launcher.backends.detached:main", record.file(CONSOLE), base_dir)
    except OSError as e:
        record.update_status(state=RunState.FAILED, exit_code=2, finished_at=time.time())
        raise KitError(f"could not start the run's supervisor: {e}") from None
    # Recorded before the child gets its inputs: until then it writes nothing, so the two never race on the
    # record, and a `kit status` right after this returns finds the supervisor.
    record.update_status(supervisor_pid=proc.pid, supervisor_start=tree.started_at(proc.pid))
    spawned.hand_over(proc, (backend, binding, plan, record.path, base_dir, inputs))
    return proc.pid


def main() -> None:
    from launcher.backends.attempts import run_attempts
    from launcher.backends import registry
    from launcher.planning.inputs import replanner
    from launcher.supervise.disk import with_disk_cause
    from launcher.supervise.failure import outcome_level, outcome_line

    code, path = 1, None
    try:
        backend_name, binding, plan, path, base_dir, inputs = spawned.inputs()
        backend = registry.backend(backend_name)
        backend.use(binding)
        result = with_disk_cause(
            run_attempts(backend, plan, RunRecord(path), base_dir, replan=replanner(inputs, plan)), RunRecord(path)
        )
        log.log(outcome_level(result.state), outcome_line(plan.run_id, result.state, result.code, result.failure))
        code = result.code
    except KitError as e:
        log.error(f"kit: error: {render(e)}")
        code = e.exit_code
        _failed(path, code)
    except BaseException:
        import traceback

        traceback.print_exc()
        _failed(path, 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _failed(path, code: int) -> None:
    """The run could not be started: the record says so (it would read "lost" otherwise)."""
    if path is None:
        return
    try:
        record = RunRecord(path)
        if not record.read_status().over:
            record.update_status(state=RunState.FAILED, exit_code=code, finished_at=time.time())
    except (OSError, ValueError):
        pass

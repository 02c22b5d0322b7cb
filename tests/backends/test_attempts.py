"""The one restart loop (backends/attempts.py), with a stand-in backend: a restart that cannot start (its checks
refuse, Ctrl-C in them) leaves the record as the last attempt ended, with no phantom attempt listed twice."""

import json
from types import SimpleNamespace

import pytest

from launcher.backends.attempts import run_attempts
from launcher.backends.base import Result
from launcher.core.describe import attempts
from launcher.errors import KitError
from launcher.records import RunRecord
from launcher.status import Failure


class Backend:
    def __init__(self, record, again):
        self.record, self.again = record, again

    def execute(self, plan, record, base_dir, console=None):
        failure = Failure(0, "h1", 0, 137, "killed by SIGKILL", "")
        record.end_attempt(state="failed", exit_code=137, failure=failure, finished_at=2.0)
        return Result(137, "failed", failure)

    def execute_again(self, plan, record, base_dir, console=None):
        raise self.again

    def restart_refused(self, record):
        return ""


@pytest.mark.parametrize("again", [KitError("host h1: no spare host left"), KeyboardInterrupt()])
def test_a_restart_that_never_started_lists_no_attempt(tmp_path, capsys, again):
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "status.json").write_text(json.dumps({"run_id": "r", "backend": "local", "state": "running",
                                                     "started_at": 1.0}))
    record = RunRecord(str(run_dir))
    plan = SimpleNamespace(run_id="r", limits=SimpleNamespace(restarts=2), world=SimpleNamespace(master_port=29500),
                           attempt=1)
    result = run_attempts(Backend(record, again), plan, record, str(tmp_path),
                          replan=lambda a: SimpleNamespace(**{**vars(plan), "attempt": a.number}))
    status = record.read_status()
    assert result.state == "failed" and status.attempts == ()
    listed = attempts(status, "failed", 137, now=3.0)
    assert [(a["attempt"], a["state"], a["exit_code"]) for a in listed] == [(1, "failed", 137)]
    assert "attempt 2/3 after" in capsys.readouterr().err


class Relaunched(Backend):
    """Attempt 2 starts (the record reopened as every backend's execute_again does), its supervisor then dies."""

    def execute_again(self, plan, record, base_dir, console=None):
        import subprocess
        dead = subprocess.Popen(["true"])
        dead.wait()
        record.update_status(reopen=True, state="starting")
        record.update_status(state="running", started_at=5.0, supervisor_pid=dead.pid, supervisor_start=1.0)
        self.during = record.read_status()
        return Result(255, "lost", None)


def test_a_reopened_run_keeps_nothing_of_the_last_attempts_end_and_its_loss_is_255(tmp_path):
    from launcher.backends.local.cancel import current_state
    from launcher.core.waiting import end_code
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "status.json").write_text(json.dumps({"run_id": "r", "backend": "local", "state": "running",
                                                     "started_at": 1.0}))
    record = RunRecord(str(run_dir))
    plan = SimpleNamespace(run_id="r", limits=SimpleNamespace(restarts=1), world=SimpleNamespace(master_port=29500),
                           attempt=1)
    backend = Relaunched(record, None)
    run_attempts(backend, plan, record, str(tmp_path),
                 replan=lambda a: SimpleNamespace(**{**vars(plan), "attempt": a.number}))
    during = backend.during
    assert (during.exit_code, during.failure, during.finished_at, during.node_exit_codes) == (None, None, None, ())
    assert [(a["state"], a["exit_code"], a["finished_at"]) for a in during.attempts] == [("failed", 137, 2.0)]
    state, _ = current_state(during)
    assert state == "lost" and end_code(state, during) == 255
    listed = attempts(during, state, None, now=6.0)
    assert listed[-1]["started_at"] == 5.0 and listed[-1]["duration_s"] == 1.0

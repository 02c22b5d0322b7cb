"""Ctrl-C while kit requeues a failed SLURM attempt (restarts): the job may be requeued already, so kit says so
and how to follow it, instead of "nothing was started" (no cluster: a stand-in for SLURM's commands)."""

import json

from launcher.backends.attempts import run_attempts
from launcher.backends.base import Result
from launcher.backends.slurm import backend as slurm
from launcher.records import RunRecord
from launcher.status import Failure
from launcher.transport.where import Result as Ran


class FakeWhere:
    remote = False

    def __init__(self, state):
        self.state, self.calls = state, []

    def run(self, argv, **kw):
        self.calls.append(argv)
        if argv[:3] == ["scontrol", "show", "job"]:
            return Ran(0, f"JobId=7 JobState={self.state} Restarts=1 ExitCode=0:0", "")
        return Ran(0, "", "")


def _run(tmp_path, monkeypatch, state, capsys):
    monkeypatch.chdir(tmp_path)   # where the user submitted from: ./runs/r is found without --run-root
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "status.json").write_text(json.dumps({
        "run_id": "r", "backend": "slurm", "state": "failed", "job_id": "7", "max_requeues": 3,
        "workdir": str(tmp_path), "run_dir": "runs/r", "nodes": [{"rank": 0, "host": "n1"}]}))
    record = RunRecord(str(run_dir))
    killed = Result(137, "failed", Failure(0, "n1", 0, 137, "killed by SIGKILL", ""))
    b = slurm.SlurmBackend()
    b.where = FakeWhere(state)
    monkeypatch.setattr(b, "execute", lambda *a, **k: killed)

    def interrupted(status):
        b.where.run(["scontrol", "requeue", "7"])
        raise KeyboardInterrupt

    monkeypatch.setattr(b, "_requeue", interrupted)
    from types import SimpleNamespace
    plan = SimpleNamespace(run_id="r", limits=SimpleNamespace(restarts=1), world=SimpleNamespace(master_port=29500),
                           attempt=1)
    again = SimpleNamespace(**{**vars(plan), "attempt": 2})
    result = run_attempts(b, plan, record, str(tmp_path), replan=lambda attempt: again)
    return result, record.read_status(), capsys.readouterr().err


def test_interrupted_after_the_requeue_says_the_job_will_run(tmp_path, monkeypatch, capsys):
    result, status, said = _run(tmp_path, monkeypatch, "PENDING", capsys)
    assert (result.code, result.state) == (130, "still running")
    assert status.state == "requeued" and len(status.attempts) == 1
    assert "kit: stopped following; SLURM job 7 is requeued and will run." in said and "kit cancel r" in said, said
    assert "--run-root" not in said and said.rstrip().endswith("stop it with `kit cancel r`."), said


def test_interrupted_before_the_requeue_keeps_the_failure(tmp_path, monkeypatch, capsys):
    result, status, said = _run(tmp_path, monkeypatch, "FAILED", capsys)
    assert (result.code, result.state) == (137, "failed") and result.failure.code == 137
    assert "kit: run r not started again: interrupted; SLURM job 7 was not requeued" in said, said

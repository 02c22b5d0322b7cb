"""A SLURM job the queue requeued by itself ended attempts of its own: the follower lists them (with the cause the
batch shell's output gives) and they count against the job's `restarts` budget like kit's own restarts. The real
requeues on the test cluster: test_slurm_requeue.py."""

import json
from types import SimpleNamespace

from launcher.backends.attempts import run_attempts
from launcher.backends.base import Result
from launcher.backends.slurm.follow import BY_QUEUE, BY_TIME_LIMIT, requeued_attempts
from launcher.records import RunRecord
from launcher.render.slurm import _requeue_lines
from launcher.status import Failure, RunStatus

BATCH = ("first attempt's words\n"
         "kit: attempt 2 after 1 requeue(s)\nkit: time limit near: requeueing\n"
         "kit: attempt 3 after 2 requeue(s)\n")


def test_each_requeue_the_record_lacks_is_listed_with_its_cause():
    current = RunStatus(run_id="r", started_at=100.0)
    fields = requeued_attempts(current, 2, BATCH, 500.0)
    one, two = fields["attempts"]
    # Attempt 1 ended by preemption (no warning in its output), attempt 2 by the time-limit warning's requeue.
    assert (one["attempt"], one["state"], one["cause"], one["started_at"]) == (1, "requeued", BY_QUEUE, 100.0)
    assert (two["attempt"], two["cause"], two["started_at"]) == (2, BY_TIME_LIMIT, 500.0)
    # kit's own restart is listed by its loop before it requeues: nothing to add then.
    assert requeued_attempts(current.replace(attempts=[one]), 1, BATCH, 600.0) == {}


def test_the_trap_says_what_the_follower_reads():
    assert any("kit: time limit near: requeueing" in line for line in _requeue_lines(2))


def _record(tmp_path) -> RunRecord:
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "status.json").write_text(json.dumps({"run_id": "r", "backend": "local", "state": "running"}))
    return RunRecord(str(run_dir))


class Backend:
    """Each attempt is killed by SIGKILL (restartable); `queue_requeues` attempts ended by the queue first."""

    def __init__(self, record, queue_requeues):
        self.record, self.queue_requeues, self.starts = record, queue_requeues, 0

    def execute(self, plan, record, base_dir, console=None):
        self.starts += 1
        record.amend(lambda cur: requeued_attempts(cur, self.queue_requeues, "", 1.0))
        return Result(137, "failed", Failure(0, "n1", 0, 137, "killed by SIGKILL", ""))

    execute_again = execute

    def restart_refused(self, record):
        return ""


def _attempts(tmp_path, capsys, queue_requeues, restarts=2):
    record = _record(tmp_path)
    backend = Backend(record, queue_requeues)
    plan = SimpleNamespace(run_id="r", limits=SimpleNamespace(restarts=restarts),
                           world=SimpleNamespace(master_port=29500), attempt=1)
    run_attempts(backend, plan, record, str(tmp_path),
                 replan=lambda a: SimpleNamespace(**{**vars(plan), "attempt": a.number}))
    return backend.starts, record.read_status().attempts, capsys.readouterr().err


def test_the_queues_requeues_spend_the_restart_budget(tmp_path, capsys):
    starts, attempts, said = _attempts(tmp_path, capsys, queue_requeues=1)
    # Attempt 1 was requeued by the queue, attempt 2 killed and restarted by kit, attempt 3 killed: budget spent.
    assert starts == 2
    assert [(a["attempt"], a["state"]) for a in attempts] == [(1, "requeued"), (2, "failed")]
    assert "attempt 3/3 after" in said
    assert "its 2 restart(s) are spent, the scheduler's own requeues among them" in said, said


def test_without_queue_requeues_kit_restarts_up_to_the_budget(tmp_path, capsys):
    starts, attempts, said = _attempts(tmp_path, capsys, queue_requeues=0)
    assert starts == 3 and [a["attempt"] for a in attempts] == [1, 2] and "spent" not in said

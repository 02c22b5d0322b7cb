"""A SLURM job that kit's own watch cancels (hang, world not formed) ends with that watch's verdict whoever reads
its end first, and a scancel that fails leaves the run running, not ended (no cluster: the record and a stand-in
for SLURM's commands; the race itself on the test cluster: test_slurm_records.py)."""

import json

from launcher.backends.slurm import follow
from launcher.backends.slurm.follow import record_end, with_kits_verdict
from launcher.records import RunRecord
from launcher.status import Failure, RunStatus
from launcher.transport.where import CommandError

HUNG = Failure(0, "n1", None, 124, "hung", "no rank made progress for 10 s")


def _record(tmp_path) -> RunRecord:
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "status.json").write_text(json.dumps({"run_id": "r", "backend": "slurm", "state": "running",
                                                     "job_id": "7", "nodes": [{"rank": 0, "host": "n1"}]}))
    return RunRecord(str(run_dir))


def test_a_job_kit_cancelled_ends_with_the_watchs_verdict():
    ended = {"state": "cancelled", "exit_code": 143, "failure": None, "ended_by": ""}
    assert with_kits_verdict(RunStatus(), ended) == ended
    kept = with_kits_verdict(RunStatus(stopping=HUNG), ended)
    assert (kept["state"], kept["exit_code"], kept["failure"]) == ("failed", 124, HUNG)
    # A job that ended otherwise (it finished before the scancel landed) keeps its own end.
    assert with_kits_verdict(RunStatus(stopping=HUNG), {"state": "succeeded", "exit_code": 0}) == \
        {"state": "succeeded", "exit_code": 0}


def test_any_reader_records_the_watchs_verdict(tmp_path):
    record = _record(tmp_path)
    record.update_status(stopping=HUNG)
    applied = record_end(record, {"state": "cancelled", "exit_code": 143, "failure": None, "ended_by": ""})
    status = record.read_status()
    assert applied["state"] == "failed" and (status.state, status.exit_code, status.failure) == ("failed", 124, HUNG)
    assert status.finished_at is not None


class RefusingWhere:
    def cancel(self, job_id):
        raise CommandError(f"scancel {job_id}: Socket timed out on send/recv operation")


def test_a_scancel_that_fails_leaves_the_run_running_and_says_so(tmp_path, capsys):
    record = _record(tmp_path)
    follow._cancel(RefusingWhere(), record, record.read_status(), HUNG)
    status = record.read_status()
    assert status.state == "running" and status.stopping == HUNG and status.finished_at is None
    said = capsys.readouterr().err
    assert "could not cancel SLURM job 7" in said and "kit cancel r tries again" in said, said

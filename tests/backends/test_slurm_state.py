"""SLURM's job states and exit codes as kit reports them, and how a finished job's run directory reads (no
cluster: the run directory is written by the test)."""

import json

import pytest

from launcher.backends.slurm.follow import (
    REQUEUES_EXHAUSTED,
    TIME_LIMIT_NO_REQUEUE,
    attempt_start,
    describe,
    ends_this_attempt,
    final_fields,
)
from launcher.backends.slurm.queue import JobInfo, _exit_code, started_from
from launcher.render.slurm import sbatch_script
from launcher.spec.cluster import ClusterSpec
from launcher.status import RunStatus
from launcher.supervise.failure import cause, restartable
from launcher.transport.where import Local


@pytest.mark.parametrize("slurm,restarts,kit", [
    ("PENDING", 0, "pending"), ("PENDING", 2, "requeued"), ("REQUEUED", 1, "requeued"),
    ("PREEMPTED", 0, "requeued"), ("RUNNING", 1, "running"), ("COMPLETING", 0, "running"),
    ("COMPLETED", 0, "succeeded"), ("FAILED", 0, "failed"), ("NODE_FAIL", 0, "failed"),
    ("CANCELLED", 0, "cancelled"), ("TIMEOUT", 0, "timeout"), ("UNKNOWN", 0, None),   # a word kit does not have: no state
])
def test_states(slurm, restarts, kit):
    info = JobInfo("7", slurm, restarts=restarts)
    assert info.kit_state == kit
    assert info.finished == (kit in ("succeeded", "failed", "cancelled", "timeout"))


def test_an_attempt_starts_when_slurm_started_it_within_what_kit_saw():
    # CI: kit's poll saw RUNNING after the ranks had started, so the report said "process started" before
    # "attempt started".  now - the controller's RunTime is the start; kept between the last mark and now.
    status = RunStatus(run_id="r", job="j", backend="slurm", state="pending", created_at=100.0, submitted_at=101.0,
                       timeline=({"at": 105.0, "event": "pending"},))
    assert attempt_start(JobInfo("7", "RUNNING", started_at=107.0), status, 110.0) == 107.0
    assert attempt_start(JobInfo("7", "RUNNING", started_at=90.0), status, 110.0) == 105.0    # another clock
    assert attempt_start(JobInfo("7", "RUNNING", started_at=4000.0), status, 110.0) == 110.0  # another zone
    assert attempt_start(JobInfo("7", "RUNNING"), status, 110.0) == 110.0
    # RunTime is whole seconds, cut down: the earliest start it allows, so no rank's mark comes before it.
    assert started_from("00:00:05", 100.0) == 94.0 and started_from("1-02:03:04", 100000.0) == 100000.0 - 93784 - 1
    assert started_from("INVALID", 100.0) is None and started_from("", 100.0) is None
    # squeue's TimeUsed drops leading zero fields (the poller reads it): "m:ss", "h:mm:ss".
    assert started_from("0:05", 100.0) == 94.0 and started_from("1:00:05", 4000.0) == 4000.0 - 3605 - 1


def test_a_requeued_job_is_never_described_as_failed():
    text = describe(JobInfo("7", "PENDING", reason="BeginTime", restarts=1))
    assert text == "SLURM job 7 requeued (BeginTime); requeued 1 time(s)"
    assert describe(JobInfo("7", "RUNNING", nodes="n[1-2]")) == "SLURM job 7 running on n[1-2]"


def test_after_a_requeue_accountings_stale_end_is_not_the_attempts_end():
    # CI, under load: scontrol timed out right after kit's requeue, and sacct still said the first attempt's FAILED;
    # kit took it for the second attempt's end and gave up on the restart.
    stale = JobInfo("7", "FAILED", from_controller=False)
    assert not ends_this_attempt(stale, requeues=1, seen_running=False)
    assert ends_this_attempt(stale, requeues=1, seen_running=True)        # this attempt ran: its end
    assert ends_this_attempt(stale, requeues=0, seen_running=False)       # the first attempt: any end is its own
    # The controller counts requeues: an end it reports with this attempt's count is this attempt's, even unseen
    # (it ran and ended between two polls); with an older count it is the previous attempt's.
    assert ends_this_attempt(JobInfo("7", "COMPLETED", restarts=1, from_controller=True), 1, False)
    assert not ends_this_attempt(JobInfo("7", "FAILED", restarts=0, from_controller=True), 1, False)


@pytest.mark.parametrize("text,code", [("0:0", 0), ("3:0", 3), ("0:9", 137), ("0:15", 143), ("", None),
                                       ("x", None)])
def test_exit_codes_read_like_a_shell_says_them(text, code):
    assert _exit_code(text) == code


def _ended_job(tmp_path, argv, node_code, batch_text="") -> RunStatus:
    """A finished job's run directory (the record and the workdir are one directory here, as without a login
    host): plan.json with node 0's argv, node 0's exit file and log, the batch shell's output."""
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps({"nodes": [{"argv": argv}]}))
    (run / "node0.exit").write_text(f"{node_code}\n")
    (run / "node0.log").write_text("bad data: reviews.csv:1: missing column 'text'\n")
    (run / "slurm-7.out").write_text(batch_text)
    return RunStatus.from_json({"backend": "slurm", "workdir": str(tmp_path), "run_dir": "runs/r", "job_id": "7",
                                "max_requeues": 0, "nodes": [{"rank": 0, "host": "n1"}]})


def RUN(tmp_path) -> str:
    return str(tmp_path / "runs" / "r")


TRAIN = ["python", "-m", "accelerate.commands.launch", "--multi_gpu", "-m", "train", "--data", "x.csv"]
SCRIPT = ["python", "-m", "accelerate.commands.launch", "--multi_gpu", "probe.py"]


@pytest.mark.parametrize("argv,meaning", [(TRAIN, "bad data"), (SCRIPT, "exit code 4")])
def test_exit_codes_mean_something_only_for_the_training_module_in_plan_json(tmp_path, argv, meaning):
    fields = final_fields(Local(), _ended_job(tmp_path, argv, 4), JobInfo("7", "FAILED", exit_code=1), RUN(tmp_path))
    assert fields["state"] == "failed" and fields["exit_code"] == 4
    assert fields["failure"].meaning == meaning


def test_the_time_limit_with_no_requeue_left_ends_as_timeout_not_failed(tmp_path):
    batch = "kit: time limit near, no requeue left: stopping\n"
    fields = final_fields(Local(), _ended_job(tmp_path, SCRIPT, 143, batch), JobInfo("7", "FAILED", exit_code=143),
                          RUN(tmp_path))
    assert fields["state"] == "timeout" and fields["failure"] is None and fields["exit_code"] == 143
    assert "no requeue left (slurm.max_requeues=0)" in fields["ended_by"]


def test_requeued_from_outside_past_the_budget_ends_as_preempted(tmp_path):
    batch = "kit: requeued 4 times, more than slurm.max_requeues=3; stopping\n"
    fields = final_fields(Local(), _ended_job(tmp_path, SCRIPT, 1, batch), JobInfo("7", "FAILED", exit_code=1), RUN(tmp_path))
    assert fields["state"] == "preempted" and fields["failure"] is None


def test_the_batch_shell_says_what_the_outcome_looks_for():
    script = sbatch_script(ClusterSpec(name="c", backend="slurm"), run_id="r", job_name="j", nodes=2, gpus=0,
                           run_dir="runs/r", workdir="/w", node_command="true")
    assert TIME_LIMIT_NO_REQUEUE in script and REQUEUES_EXHAUSTED in script


def test_an_attempt_no_node_ran_is_said_as_slurms_not_as_the_last_attempts_rank(tmp_path):
    # CI: a requeued attempt SLURM refused to start ("Job credential revoked", in the controller's log only) read as
    # the first attempt's rank 1 exiting 137 again, from the exit file and logs that attempt had left. kit clears
    # the exit files before it requeues; with none written and the attempt never seen running, the end is SLURM's.
    earlier = "srun: error: n2: task 1: Exited with exit code 1\n"   # the first attempt's, in the same output file
    status = _ended_job(tmp_path, TRAIN, 137, earlier)
    (tmp_path / "runs" / "r" / "node0.exit").unlink()
    info = JobInfo("7", "FAILED", reason="NonZeroExitCode", restarts=1, exit_code=1, from_controller=True)
    fields = final_fields(Local(), status, info, RUN(tmp_path), ran=False)
    f = fields["failure"]
    assert fields["state"] == "failed" and fields["exit_code"] == 1 and fields["node_exit_codes"] == [None]
    assert cause(f) == ("its nodes never started: SLURM ended job 7 before any node's command ran: state FAILED, "
                        "reason NonZeroExitCode; the controller's log says why"), cause(f)
    assert restartable(fields["state"], f)   # not the job's verdict: a restart may follow
    # The attempt's own shell ran and srun could not launch the tasks: its words, not the earlier attempt's.
    (tmp_path / "runs" / "r" / "slurm-7.out").write_text(
        earlier + "kit: attempt 2 after 1 requeue(s)\nsrun: error: Task launch for StepId=7.0 failed on node n2\n")
    f = final_fields(Local(), status, info, RUN(tmp_path), ran=False)["failure"]
    assert f.last_line.endswith("before any node's command ran: srun: error: Task launch for StepId=7.0 failed on "
                                "node n2 (in runs/r/slurm-7.out)"), f.last_line
    # Seen running, every node killed before writing its code: not "never started".
    fields = final_fields(Local(), status, info, RUN(tmp_path), ran=True)
    assert fields["failure"] is None and fields["state"] == "failed"

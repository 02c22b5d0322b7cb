"""SLURM's job states and exit codes as kit reports them (pure: no cluster)."""

import pytest

from launcher.backends.slurm_outcome import describe
from launcher.backends.slurm_query import JobInfo, _exit_code


@pytest.mark.parametrize("slurm,restarts,kit", [
    ("PENDING", 0, "pending"), ("PENDING", 2, "requeued"), ("REQUEUED", 1, "requeued"),
    ("PREEMPTED", 0, "requeued"), ("RUNNING", 1, "running"), ("COMPLETING", 0, "running"),
    ("COMPLETED", 0, "succeeded"), ("FAILED", 0, "failed"), ("NODE_FAIL", 0, "failed"),
    ("CANCELLED", 0, "cancelled"), ("TIMEOUT", 0, "timeout"), ("UNKNOWN", 0, "unknown"),
])
def test_states(slurm, restarts, kit):
    info = JobInfo("7", slurm, restarts=restarts)
    assert info.kit_state == kit
    assert info.finished == (kit in ("succeeded", "failed", "cancelled", "timeout"))


def test_a_requeued_job_is_never_described_as_failed():
    text = describe(JobInfo("7", "PENDING", reason="BeginTime", restarts=1))
    assert text == "SLURM job 7 requeued (BeginTime); requeued 1 time(s)"
    assert describe(JobInfo("7", "RUNNING", nodes="n[1-2]")) == "SLURM job 7 running on n[1-2]"


@pytest.mark.parametrize("text,code", [("0:0", 0), ("3:0", 3), ("0:9", 137), ("0:15", 143), ("", None),
                                       ("x", None)])
def test_exit_codes_read_like_a_shell_says_them(text, code):
    assert _exit_code(text) == code

"""When a sweep stops launching trials (launcher/sweeps/driver.py): max_failures in a row with one cause."""

from launcher.status import Failure, RunStatus
from launcher.sweeps.driver import Streak, failure_key


def _failed(rank: int, host: str, words: str = "ValueError: boom", code: int = 1) -> str:
    status = RunStatus(run_id="s-t1", state="failed", exit_code=code,
                       failure=Failure(node=rank, host=host, rank=rank, code=code, meaning="exit code 1",
                                       last_line=words))
    return failure_key(status, "", "s-t1")


def test_the_same_failure_on_other_ranks_and_hosts_is_one_cause():
    assert _failed(0, "n1") == _failed(3, "n2") != _failed(0, "n1", "KeyError: x")


def test_a_trial_that_never_started_is_keyed_by_its_line_without_its_run_id():
    a = failure_key(RunStatus(), "kit: error: sweep trial s-t1: host n1: python not found", "s-t1")
    b = failure_key(RunStatus(), "kit: error: sweep trial s-t4: host n1: python not found", "s-t4")
    assert a == b


def test_three_in_a_row_stop_a_success_or_another_cause_starts_again():
    streak = Streak(3)
    assert [streak.ended(s, k) for s, k in [("failed", "a"), ("failed", "a"), ("succeeded", ""), ("failed", "a"),
                                              ("failed", "b"), ("failed", "a"), ("failed", "a"), ("failed", "a")]] \
        == [False, False, False, False, False, False, False, True]
    assert not any(Streak(None).ended("failed", "a") for _ in range(10))

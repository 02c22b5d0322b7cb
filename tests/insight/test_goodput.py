"""Goodput and badput (insight/goodput.py) of runs written out by hand: every second gets one category, so they add
up to the wall time; a failed attempt's training after the checkpoint the next attempt restored is lost; a job that
reports nothing gets what kit saw and no goodput; a SLURM job's wait is its queue time."""

import pytest

from launcher.insight.goodput import Attempt, report


def ev(name, t, **fields):
    return {"e": name, "t": t, **fields}


def span(name, t0, t1, **fields):
    return {"e": name, "t": t1, "t0": t0, "t1": t1, **fields}


RESTARTED = [
    ev("imported", 5), ev("world", 6), ev("train", 10, step=0), ev("first_step", 10.5, step=1),
    span("save", 20, 21, step=10), ev("progress", 25, step=15), ev("progress", 30, step=20),
    ev("imported", 50), ev("world", 51), span("restore", 55, 56, step=10), ev("train", 57, step=10),
    ev("first_step", 57.5, step=11), span("eval", 70, 72, step=20), span("save", 80, 81, step=30),
    ev("end", 90, step=40), span("test", 90, 92),
]


def _restarted():
    attempts = [Attempt(1, 1, 40, "failed", "node 1 (n2) rank 1 killed by SIGKILL"), Attempt(2, 45, 100, "succeeded")]
    return report(0.0, 100.0, attempts, [dict(e) for e in RESTARTED], [])


def test_a_restarted_run_adds_up_and_loses_what_came_after_its_checkpoint():
    r = _restarted()
    assert r.badput == {"start-up and imports": 19, "rendezvous": 2, "checkpoint restore": 1, "checkpoint save": 2,
                        "evaluation": 4, "progress lost since the last checkpoint": 9, "failure detection": 10,
                        "restart": 5, "wrap-up and teardown": 8}
    assert r.goodput_s == 40 and r.goodput == pytest.approx(0.4) and r.total_s == 100
    assert sum(r.badput.values()) + r.goodput_s == pytest.approx(r.total_s)
    assert r.time_to_first_step_s == 10.5
    assert r.attempts == [{"attempt": 1, "cause": "node 1 (n2) rank 1 killed by SIGKILL", "failed_at": 30,
                           "lost_s": 9, "restored_step": 10, "resumed_after_s": 27.5}]
    covered = sorted((s, e) for s, e, _, _ in r.segments)
    assert covered[0][0] == 0 and covered[-1][1] == 100 and all(a[1] == b[0] for a, b in zip(covered, covered[1:]))


def test_a_last_attempt_that_failed_loses_its_progress_since_its_own_last_save():
    attempts = [Attempt(1, 0, 40, "failed", "lost")]
    r = report(0.0, 40.0, attempts, [ev("imported", 2), ev("world", 3), ev("train", 5), span("save", 10, 11, step=5),
                                      ev("progress", 20, step=12)], [])
    assert r.badput["progress lost since the last checkpoint"] == 9 and r.goodput_s == 5
    assert r.badput["failure detection"] == 20


def test_a_job_that_reports_nothing_gets_what_kit_saw():
    attempts = [Attempt(1, 1, 30, "succeeded")]
    marks = [{"at": 4.0, "event": "world formed", "attempt": 1, "detail": ""}]
    r = report(0.0, 30.0, attempts, [], marks)
    assert r.goodput_s is None and r.goodput is None
    assert r.badput == {"start-up and imports": 4, "running (not reported)": 26}


def test_a_slurm_jobs_wait_in_the_queue_is_queue_time():
    attempts = [Attempt(1, 1, 60, "succeeded")]
    marks = [{"at": 12.0, "event": "running", "attempt": 1, "detail": ""}]
    events = [ev("imported", 15), ev("world", 16), ev("train", 20), ev("end", 50)]
    r = report(0.0, 60.0, attempts, events, marks)
    assert r.badput["queue"] == 11 and r.badput["start-up and imports"] == 1 + 3 + 4 and r.goodput_s == 30


def test_a_job_slurm_requeued_itself_is_two_windows_with_its_wait_as_queue():
    """The follower lists the queue's own requeue as an attempt (slurm/requeues.py): attempt 1 ends when it is
    seen requeued, attempt 2 starts when it is seen running again; the wait between is queue time."""
    marks = [{"at": 5.0, "event": "running", "attempt": 1, "detail": ""},
             {"at": 40.0, "event": "requeued", "attempt": 2, "detail": "BeginTime"},
             {"at": 60.0, "event": "running", "attempt": 2, "detail": ""}]
    windows = [Attempt(1, 1, 40, "requeued"), Attempt(2, 60, 100, "succeeded")]
    events = [ev("imported", 6), ev("world", 7), ev("train", 10), span("save", 30, 31, step=20), ev("end", 31, step=20),
              ev("imported", 62), ev("world", 63), span("restore", 64, 65, step=20), ev("train", 66),
              ev("end", 90, step=50)]
    r = report(0.0, 100.0, windows, events, marks)
    assert r.badput["queue"] == 4 + 20 and r.goodput_s == 20 + 24 and "progress lost since the last checkpoint" not in r.badput
    assert sum(r.badput.values()) + r.goodput_s == 100

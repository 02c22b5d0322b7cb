"""Goodput and badput (insight/goodput.py) of runs written out by hand: every second gets one category, so they add
up to the wall time; a failed attempt's training after the checkpoint the next attempt restored is lost; a job that
reports nothing gets what kit saw, no goodput and its unreported time outside badput; a SLURM job's wait is its queue
time; a straggler's figures are finite, and its cause is said when the machine was loaded."""

import json

import pytest

from launcher.insight.goodput import Attempt, report
from launcher.insight.report_text import report_text


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
    # What it did after the world formed is not known: not badput, a time of its own.
    assert r.badput == {"start-up and imports": 4} and r.unreported_s == 26


def test_a_slurm_jobs_wait_in_the_queue_is_queue_time():
    attempts = [Attempt(1, 1, 60, "succeeded")]
    marks = [{"at": 12.0, "event": "running", "attempt": 1, "detail": ""}]
    events = [ev("imported", 15), ev("world", 16), ev("train", 20), ev("end", 50)]
    r = report(0.0, 60.0, attempts, events, marks)
    assert r.badput["queue"] == 11 and r.badput["start-up and imports"] == 1 + 3 + 4 and r.goodput_s == 30


def test_a_job_slurm_requeued_itself_is_two_windows_with_its_wait_as_queue():
    """The follower lists the queue's own requeue as an attempt (slurm/follow.py): attempt 1 ends when it is
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


def _sections(w, forward, load, wait, n=20):
    """Both ranks' section reports of window w, as the training module writes them (train/insight.py)."""
    return [{"e": "sections", "t": 20.0 + 5 * w, "r": r, "w": w, "from": n * w, "to": n * w + n - 1, "n": n,
             "node": 0, "data": 0.001, "forward": forward[r], "load": load, "cpus": 2,
             "wait": wait[r], "threads": 2} for r in range(2)]


def test_a_straggler_slowed_by_a_loaded_machine_is_reported_with_that_cause():
    attempts = [Attempt(1, 1, 60, "succeeded")]
    events = [ev("imported", 5), ev("world", 6), ev("train", 10), ev("end", 50)]
    events += [e for w in range(4) for e in _sections(w, (0.05, 0.12), 6.1, (0.0, 0.07))]
    r = report(0.0, 60.0, attempts, events, [])
    s = r.straggler
    assert (s["rank"], s["section"], s["ratio"]) == (1, "forward", 2.4) and s["lost_s"] == pytest.approx(4 * 20 * 0.07)
    assert s["machine"] == ("the machine is loaded (load 6.1 on 2 cores, other processes; rank 1 waited 70 ms a step "
                            "more than the others for a CPU)")
    data = {"run_id": "r", "job": "j", "backend": "local", "state": "succeeded", "total_s": r.total_s,
            "goodput": r.goodput, "goodput_s": r.goodput_s, "badput": r.badput, "unreported_s": r.unreported_s,
            "time_to_first_step_s": None, "attempts": [], "straggler": s, "timeline": []}
    assert ("straggler: rank 1 (node 0), forward 2.4x the fastest rank; the machine is loaded (load 6.1 on 2 cores, "
            "other processes; rank 1 waited 70 ms a step more than the others for a CPU); the world waited 5.6 s for "
            "its slowest rank") \
        in report_text(data)


def test_a_straggler_against_a_zero_time_baseline_reports_finite_numbers():
    # Rank 0's batches always ready (0.0 s a step), rank 1 waits 4 ms: no ratio of inf in the report's data.
    attempts = [Attempt(1, 1, 60, "succeeded")]
    events = [ev("train", 10), ev("end", 50)]
    events += [dict(e, data=(0.0, 0.004)[e["r"]], forward=0.05, load=0.2, wait=0.0)
               for w in range(3) for e in _sections(w, (0.05, 0.05), 0.2, (0.0, 0.0))]
    s = report(0.0, 60.0, attempts, events, []).straggler
    json.dumps(s, allow_nan=False)
    assert s["ratio"] is None and s["slower"] == "data 4.0 ms per step against 0.0 ms on the fastest rank"
    assert s["machine"] == ""


def test_a_fast_restart_gives_each_event_to_the_attempt_that_emitted_it():
    """Issue 39: attempt 2 started 0.1 s after attempt 1 ended, so attempt 1's last events (its last second) lay in
    both windows (each widened by a second) and went to attempt 2. Every event names its attempt (`a`,
    train/insight.py): attempt 1 keeps its training up to its checkpoint and loses what followed, exactly."""
    one = [ev("imported", 3), ev("world", 4), ev("train", 5, step=0), ev("first_step", 5.5, step=1),
           span("save", 20, 21, step=10), span("save", 40, 41, step=20), ev("progress", 45, step=23),
           ev("progress", 49.5, step=25), ev("progress", 49.9, step=26)]
    two = [ev("imported", 53), ev("world", 54), span("restore", 55, 56, step=20), ev("train", 57, step=20),
           ev("first_step", 57.4, step=21), ev("end", 140, step=80), span("test", 140, 142)]
    events = [{**e, "a": 1} for e in one] + [{**e, "a": 2} for e in two]
    attempts = [Attempt(1, 1, 50, "failed", "node 1 rank 1 killed by SIGKILL"), Attempt(2, 50.1, 150, "succeeded")]
    r = report(0.0, 150.0, attempts, sorted(events, key=lambda e: e["t"]), [])
    assert r.goodput_s == pytest.approx(15 + 19 + 83)   # 5-20, 21-40 kept by the checkpoint of step 20; 57-140
    assert r.attempts == [{"attempt": 1, "cause": "node 1 rank 1 killed by SIGKILL", "failed_at": 49.9,
                           "lost_s": pytest.approx(8.9), "restored_step": 20, "resumed_after_s": pytest.approx(7.5)}]
    assert r.badput["failure detection"] == pytest.approx(0.1) and r.badput["restart"] == pytest.approx(0.1)
    assert sum(r.badput.values()) + r.goodput_s == pytest.approx(r.total_s)
    # A user's script that names no attempt is still placed by the time window.
    plain = report(0.0, 150.0, [Attempt(1, 1, 50, "failed"), Attempt(2, 50.1, 150, "succeeded")],
                   [ev("train", 5), ev("train", 60), ev("end", 140)], [])
    assert plain.goodput_s == pytest.approx(80)


def test_a_slurm_requeue_numbers_its_attempt_by_the_requeue_count():
    """On SLURM a restart requeues the same script (kit's rendezvous id is attempt 1's): the events' `sr`, SLURM's
    restart count, names the attempt there."""
    one = [ev("train", 5, step=0), span("save", 20, 21, step=10), ev("progress", 29.8, step=14)]
    two = [span("restore", 33, 34, step=10), ev("train", 35, step=10), ev("end", 60, step=40)]
    events = [{**e, "a": 1, "sr": 0} for e in one] + [{**e, "a": 1, "sr": 1} for e in two]
    attempts = [Attempt(1, 1, 30, "requeued"), Attempt(2, 30.1, 70, "succeeded")]
    r = report(0.0, 70.0, attempts, events, [], by_requeues=True)
    assert r.goodput_s == pytest.approx(15 + 25) and r.attempts[0]["lost_s"] == pytest.approx(8.8)


def test_a_run_that_pretrains_counts_both_phases_training_as_goodput():
    """Issue 39: the pretrain phase and fine-tuning each report a loop (`train` ... `end`), told apart by their
    phase: fine-tuning is training, not wrap-up; the set-up between the phases is not training."""
    events = [ev("imported", 3), ev("world", 4), ev("train", 5, step=0, phase="pretrain"),
              ev("first_step", 5.5, step=1, phase="pretrain"), span("eval", 20, 21, step=30, phase="pretrain"),
              ev("end", 21, step=30, phase="pretrain"), ev("train", 24, step=0, phase="train"),
              ev("first_step", 24.5, step=1, phase="train"), span("save", 60, 61, step=50, phase="train"),
              ev("end", 100, step=100, phase="train"), span("test", 100, 103, phase="train")]
    r = report(0.0, 110.0, [Attempt(1, 1, 110, "succeeded")], [{**e, "a": 1} for e in events], [])
    assert r.goodput_s == pytest.approx((20 - 5) + (100 - 24) - 1)
    # Before the attempt, before the world, before the first loop, between the phases.
    assert r.badput["wrap-up and teardown"] == pytest.approx(7) and r.badput["start-up and imports"] == pytest.approx(
        1 + 2 + 1 + 3)


def test_a_restart_in_fine_tuning_keeps_up_to_the_fine_tuning_checkpoint_it_restored():
    """Both phases save a step 10; attempt 2 restored fine-tuning's: what attempt 1 kept ends with that save."""
    one = [ev("train", 5, step=0, phase="pretrain"), span("save", 10, 11, step=10, phase="pretrain"),
           ev("end", 20, step=20, phase="pretrain"), ev("train", 22, step=0, phase="train"),
           span("save", 40, 41, step=10, phase="train"), ev("progress", 49, step=14)]
    two = [span("restore", 55, 56, step=10, phase="train"), ev("train", 57, step=10, phase="train"),
           ev("end", 90, step=40, phase="train")]
    events = [{**e, "a": 1} for e in one] + [{**e, "a": 2} for e in two]
    r = report(0.0, 100.0, [Attempt(1, 1, 50, "failed", "x"), Attempt(2, 51, 100, "succeeded")], events, [])
    assert r.attempts[0]["lost_s"] == pytest.approx(8) and r.goodput_s == pytest.approx(14 + 18 + 33)


def test_an_attempt_after_the_run_had_finished_loses_nothing():
    """Issue 39: a rank died after the run wrote FINISHED; attempt 2 found this run's outputs complete and ended
    (train/resume.py): attempt 1's training is all kept, attempt 2's time after its world formed is wrap-up."""
    one = [ev("imported", 3), ev("world", 4), ev("train", 5, step=0), span("save", 20, 21, step=10),
           ev("end", 40, step=20), span("test", 40, 42)]
    two = [ev("imported", 47), ev("world", 48), ev("finished", 49, step=20)]
    events = [{**e, "a": 1} for e in one] + [{**e, "a": 2} for e in two]
    r = report(0.0, 50.0, [Attempt(1, 1, 45, "failed", "rank 1 killed by SIGKILL"), Attempt(2, 45.5, 50, "succeeded")],
               events, [])
    assert r.goodput_s == pytest.approx(34) and r.attempts == [] and "progress lost since the last checkpoint" not in r.badput
    assert r.badput["wrap-up and teardown"] == pytest.approx(3 + 2) and r.unreported_s == 0

"""A restart phase by phase (insight/restarts.py, issue 39 item 4): the phases from the failure to the restarted
world's first step add up to the gap exactly, each ends at a moment kit or the training module recorded, a moment
nobody recorded joins its neighbours into one named phase, a moment out of order never makes a phase negative, and
the restart's path is the record's (a record from before it was kept: full)."""

import pytest

from launcher.insight.goodput import Attempt, report
from launcher.insight.report_text import report_text
from launcher.insight.restarts import FROM_END, FROM_KIT, FROM_TRAINING, PHASES, split


def ev(name, t, **fields):
    return {"e": name, "t": t, **fields}


def span(name, t0, t1, **fields):
    return {"e": name, "t": t1, "t0": t0, "t1": t1, **fields}


# Attempt 2's main process, as the training module reports it (train/insight.py).
AFTER = [{"e": "start", "t": 44.9, "at": 43.25, "a": 2}, ev("imported", 44.95, a=2), ev("world", 45.6, a=2),
         span("restore", 46.1, 46.35, step=10, a=2), ev("train", 46.4, step=10, a=2),
         ev("first_step", 47.123, step=11, a=2)]


def _phases(r):
    return [(p["phase"], p["s"]) for p in r["phases"]]


def test_every_phase_named_in_order_and_they_add_up_to_the_gap():
    r = split(1, 30.0, 30.4, 31.9, 32.1, 2, AFTER, path="full")
    assert _phases(r) == [("detect", 0.4), ("stop", 1.5), ("relaunch", 11.35), ("imports", 1.7),
                          ("rendezvous", 0.65), ("set-up", 0.5), ("restore", 0.25), ("first step", 0.773)]
    assert [p["phase"] for p in r["phases"]] == list(PHASES)
    assert r["gap_s"] == 17.123 and round(sum(s for _, s in _phases(r)), 3) == r["gap_s"]
    assert r["failure_from"] == FROM_TRAINING and r["path"] == "full" and r["to_attempt"] == 2
    # Each phase ends where the next begins: no second counted twice or left out.
    assert all(a["to"] == b["from"] for a, b in zip(r["phases"], r["phases"][1:]))
    assert r["phases"][0]["from"] == 30.0 and r["phases"][-1]["to"] == 47.123


def test_a_moment_nobody_recorded_joins_its_neighbours_into_one_named_phase():
    """A SLURM requeue (kit does not follow the nodes: no noticed or ended moment) and a job that reports no
    imports or restore: detect and stop end at the attempt's recorded end, and never vanish."""
    events = [{"e": "start", "t": 60, "at": 59.0}, ev("world", 62.0), ev("train", 63.0), ev("first_step", 64.0)]
    r = split(1, 30.0, None, None, 40.0, 2, events)
    assert _phases(r) == [("detect and stop", 10.0), ("relaunch", 19.0), ("imports and rendezvous", 3.0),
                          ("set-up", 1.0), ("restore", 0.0), ("first step", 1.0)]
    assert r["phases"][4]["note"] == "nothing restored"
    assert r["gap_s"] == 34.0 and r["path"] == "full"   # a record that does not say: kit had only the full path
    # Only kit's own "world formed" mark and the first step: one phase from the end to the world, one after.
    r = split(1, 30.0, 30.5, 31.0, 31.2, 2, [ev("first_step", 50.0)], world_mark=45.0)
    assert _phases(r) == [("detect", 0.5), ("stop", 0.5), ("relaunch, imports and rendezvous", 14.0),
                          ("set-up, restore and first step", 5.0)]


def test_the_failure_moment_is_the_last_training_report_else_kits_own():
    assert split(1, None, 30.4, 31.9, 32.0, 2, AFTER)["failure_from"] == FROM_KIT
    r = split(1, None, 30.4, 31.9, 32.0, 2, AFTER)
    assert r["phases"][0] == {"phase": "detect", "s": 0.0, "from": 30.4, "to": 30.4} and r["gap_s"] == 16.723
    r = split(1, None, None, None, 32.0, 2, AFTER)
    assert r["failure_from"] == FROM_END and _phases(r)[0] == ("detect and stop", 0.0) and r["gap_s"] == 15.123


def test_moments_out_of_order_give_no_negative_phase_and_still_add_up():
    """Another host's clock behind kit's: its process start before kit saw every node end."""
    events = [{"e": "start", "t": 31, "at": 30.8}, ev("imported", 31.5), ev("world", 32.0), ev("first_step", 33.0)]
    r = split(1, 30.0, 30.5, 31.0, 31.1, 2, events)
    assert all(p["s"] >= 0 for p in r["phases"]) and dict(_phases(r))["relaunch"] == 0.0
    assert round(sum(s for _, s in _phases(r)), 3) == r["gap_s"] == 3.0


def test_a_restarted_world_that_never_stepped_has_no_gap():
    r = split(1, 30.0, 30.4, 31.9, 32.0, 2, [ev("imported", 40), ev("world", 41)])
    assert r["gap_s"] is None and r["phases"] == [] and r["first_step_at"] is None


def test_the_report_gives_each_restart_with_its_path_and_the_text_shows_phases_that_add_up():
    before = [ev("imported", 5), ev("world", 6), ev("train", 10, step=0), ev("first_step", 10.5, step=1),
              span("save", 20, 21, step=10), ev("progress", 30, step=20)]
    attempts = [Attempt(1, 1, 32.1, "failed", "rank 1 killed by SIGKILL", noticed_at=30.4, nodes_ended_at=31.9,
                        restart="warm"),
                Attempt(2, 32.2, 100, "succeeded")]
    r = report(0.0, 100.0, attempts, [dict(e, a=1) for e in before] + AFTER + [ev("end", 90, step=40, a=2)], [])
    assert len(r.restarts) == 1 and r.restarts[0]["path"] == "warm"
    assert r.restarts[0]["gap_s"] == pytest.approx(17.123)
    assert r.attempts[0]["resumed_after_s"] == r.restarts[0]["gap_s"]   # the same failure moment
    data = {"run_id": "r", "job": "j", "backend": "local", "state": "succeeded", "total_s": 100.0,
            "goodput": r.goodput, "goodput_s": r.goodput_s, "badput": r.badput, "unreported_s": r.unreported_s,
            "time_to_first_step_s": r.time_to_first_step_s, "straggler": None,
            "attempts": [{"attempt": 1, "started_at": 1, "finished_at": 32.1, "state": "failed", "exit_code": 137,
                          "cause": "rank 1 killed by SIGKILL", **r.attempts[0], "restart": r.restarts[0]},
                         {"attempt": 2, "started_at": 32.2, "finished_at": 100, "state": "succeeded",
                          "exit_code": 0, "cause": ""}]}
    text = report_text(data)
    assert ("restart -> attempt 2 (warm restart): 17.12 s from the failure (its last training report) to its "
            "first step") in text
    shown = [line.split() for line in text.splitlines() if line.startswith("       ")]
    assert [" ".join(w[:-2]) for w in shown] == list(PHASES)
    assert round(sum(float(w[-2]) for w in shown), 2) == 17.12

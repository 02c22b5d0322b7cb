"""The supervising loop (supervise/supervisor.py) with stand-in nodes: after one node fails the others get a few
seconds to end by themselves (their ranks' own exit codes and errors are then recorded), and only those still
running are stopped, counted as stopped by kit."""

import time

from launcher.supervise import supervisor
from launcher.supervise.supervisor import Cancel, supervise


class Node:
    def __init__(self, code, after):
        self.code, self.at, self.sent = code, time.monotonic() + after, []

    def poll(self):
        return self.code if time.monotonic() >= self.at else None

    def send(self, what):
        self.sent.append(what)
        self.code, self.at = 143, 0.0


def test_a_node_that_ends_by_itself_after_the_first_failure_is_not_stopped(monkeypatch):
    monkeypatch.setattr(supervisor, "SETTLE_SECONDS", 3.0)
    first, second = Node(134, 0.0), Node(1, 0.5)
    outcome = supervise([first, second], Cancel())
    assert outcome.state == "failed" and outcome.first_failed == 0
    assert outcome.failed_nodes == (0, 1) and outcome.stopped == () and second.sent == []


def test_a_node_still_running_after_the_settling_time_is_stopped(monkeypatch):
    monkeypatch.setattr(supervisor, "SETTLE_SECONDS", 0.3)
    first, second = Node(1, 0.0), Node(0, 3600.0)
    started = time.monotonic()
    outcome = supervise([first, second], Cancel())
    assert time.monotonic() - started < 5
    assert outcome.failed_nodes == (0,) and outcome.stopped == (1,) and second.sent == ["stop"]
    assert outcome.node_codes == [1, 143] and outcome.code == 1


def test_the_outcome_says_when_kit_saw_the_failure_and_when_every_node_had_ended(monkeypatch):
    """The moments kit report splits a restart at (insight/restarts.py): the failure seen within a poll of the
    node's end, then the others' settling time until every node ended; finalize keeps them."""
    monkeypatch.setattr(supervisor, "SETTLE_SECONDS", 0.6)
    before = time.time()
    outcome = supervise([Node(1, 0.3), Node(0, 3600.0)], Cancel())
    after = time.time()
    assert before + 0.3 <= outcome.noticed_at <= before + 0.3 + 3 * supervisor.POLL_SECONDS + 0.2
    assert outcome.noticed_at + 0.6 <= outcome.ended_at <= after
    kept = supervisor.finalize(outcome, supervisor.Failure(0, "h", 0, 1, "", "error"))
    assert (kept.noticed_at, kept.ended_at) == (outcome.noticed_at, outcome.ended_at)

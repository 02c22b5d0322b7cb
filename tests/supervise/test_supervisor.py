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

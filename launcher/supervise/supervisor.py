"""The supervising loop every backend that starts node processes itself shares (local now, SSH next).

Nodes are handles with `poll() -> exit code | None` and `send("stop" | "hurry" | "kill")`; each one's watchdog
does the actual killing. The loop waits until every node succeeds, one fails, or a cancel arrives, then stops
the rest and waits until every watchdog has exited, which they do only once nothing of their node is left.
Signals never raise here: a second Ctrl-C shortens the grace period, a third kills at once.
"""

import logging
import dataclasses
import signal
import threading
import time
from dataclasses import dataclass
from typing import Optional

from launcher.supervise.failure import Failure, PREEMPTED
from launcher.states import RunState

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1
# After one node fails, how long the others may take to end by themselves before kit stops them: ranks that lost a
# collective's peer end within seconds, and a node that ends by itself records its ranks' own exit codes and
# errors, so the rank that raised is told apart from those that died of it (tracebacks.first_cause).
SETTLE_SECONDS = 5.0
_ESCALATION = ("stop", "hurry", "kill")


@dataclass
class Outcome:
    state: str  # succeeded | failed | preempted | cancelled
    code: int
    node_codes: list
    first_failed: Optional[int] = None  # index of the first node seen failing
    failure: Optional[Failure] = None  # filled by the caller, which can read the logs
    stopped: tuple = ()  # nodes kit stopped (still running when the run ended): their codes are kit's
    failed_nodes: tuple = ()  # the nodes that failed by themselves, in the order they ended
    # Wall clock: when the loop saw what ended the run (a node's failure, a watch's, a cancel), and when every node
    # had ended (the teardown done); kit report splits a restart at these (insight/restarts.py).
    noticed_at: Optional[float] = None
    ended_at: Optional[float] = None


class Cancel:
    """Counts cancel requests (SIGINT, SIGTERM) without raising into the loop; SIGHUP only drops the console."""

    def __init__(self, on_hangup=None):
        self.count = 0
        self.signum = None
        self._on_hangup = on_hangup
        self._previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._request)
        self._previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, self._hangup)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _request(self, signum, _frame):
        self.count += 1
        self.signum = self.signum or signum

    def _hangup(self, _signum, _frame):
        if self._on_hangup:
            self._on_hangup()


def _poll_all(nodes, codes: list, order: list) -> None:
    for i, node in enumerate(nodes):
        if codes[i] is None:
            codes[i] = node.poll()
            if codes[i] is not None:
                order.append(i)


class _Watching:
    """The watches polled in a thread of their own: a watch that asks a host (a listing over SFTP, the stacks of
    every rank) can take seconds, and the loop must still see a node's end or a Ctrl-C within POLL_SECONDS."""

    def __init__(self, watches) -> None:
        self.failure: Optional[Failure] = None
        self._done = threading.Event()
        self._thread = None
        if watches:
            self._thread = threading.Thread(target=self._run, args=(list(watches),), daemon=True, name="kit-watches")
            self._thread.start()

    def _run(self, watches) -> None:
        while watches and not self._done.is_set():
            for w in list(watches):
                if self._done.is_set():
                    return
                try:
                    found = w.poll()
                except Exception as e:  # the run goes on unwatched by it rather than end for kit's own fault
                    if not self._done.is_set():
                        log.warning(
                            f"kit: warning: {type(w).__name__} stopped watching the run: {e or type(e).__name__}"
                        )
                    watches.remove(w)
                    continue
                if found is not None:
                    self.failure = found
                    return
            self._done.wait(POLL_SECONDS)

    def stop(self) -> None:
        self._done.set()


def supervise(nodes, cancel: Cancel, on_stop=None, watches=()) -> Outcome:
    """`watches`: objects whose poll() returns a Failure when the run must stop though no node failed (a world
    that did not form, a hang): the run then ends failed with that failure."""
    codes = [None] * len(nodes)
    order: list[int] = []  # node indexes in the order they exited
    watching = _Watching(watches)
    try:
        while True:
            _poll_all(nodes, codes, order)
            failed = [i for i in order if codes[i] != 0]
            if failed or cancel.count or all(c is not None for c in codes) or watching.failure is not None:
                break
            time.sleep(POLL_SECONDS)
        noticed_at = time.time()
        # Nodes stopped by a cancel exit non-zero too: what ended the loop decides the state. A cancel seen in the
        # same look as a node's failure was asked for before that failure was seen (a host found silent, say, while
        # the loop waited): the user's word decides. One that comes while the others settle came after it.
        cancelled = bool(cancel.count)
        if failed and not cancelled and watching.failure is None:
            watching.stop()  # the run has failed: no watch decides anything more (nor writes the record)
            _settle(nodes, codes, order, cancel)
    finally:
        watching.stop()
    stopped_by = watching.failure
    stopped = tuple(i for i, c in enumerate(codes) if c is None)
    if not all(c is not None for c in codes):
        if on_stop:
            on_stop()
        _stop_all(nodes, codes, order, cancel)
    ended_at = time.time()
    if stopped_by is not None and not cancelled and not failed:
        return Outcome(
            RunState.FAILED,
            stopped_by.code,
            codes,
            failure=stopped_by,
            stopped=stopped,
            noticed_at=noticed_at,
            ended_at=ended_at,
        )
    outcome = _outcome(codes, order, cancel if cancelled else None)
    return dataclasses.replace(
        outcome,
        stopped=stopped,
        noticed_at=noticed_at,
        ended_at=ended_at,
        failed_nodes=tuple(i for i in outcome.failed_nodes if i not in stopped),
    )


def _settle(nodes, codes, order, cancel: Cancel) -> None:
    """Up to SETTLE_SECONDS for the nodes still running to end by themselves (or a cancel)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while not all(c is not None for c in codes) and not cancel.count and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        _poll_all(nodes, codes, order)


def _stop_all(nodes, codes, order, cancel: Cancel) -> None:
    sent = 0
    while not all(c is not None for c in codes):
        want = min(max(cancel.count, 1), len(_ESCALATION))
        while sent < want:
            for i, node in enumerate(nodes):
                if codes[i] is None:
                    node.send(_ESCALATION[sent])
            sent += 1
        time.sleep(POLL_SECONDS)
        _poll_all(nodes, codes, order)


def _outcome(codes, order, cancel: Optional[Cancel]) -> Outcome:
    failed = [i for i in order if codes[i] != 0]
    if cancel is not None:
        return Outcome(RunState.CANCELLED, 128 + (cancel.signum or signal.SIGINT), codes)
    if not failed:
        return Outcome(RunState.SUCCEEDED, 0, codes)
    first = failed[0]
    return Outcome(RunState.FAILED, codes[first], codes, first_failed=first, failed_nodes=tuple(failed))


def finalize(outcome: Outcome, failure: Optional[Failure]) -> Outcome:
    """Attach the failure read from the logs: the rank's own code becomes the run's, 75 makes it preempted."""
    if outcome.state != RunState.FAILED or failure is None or outcome.failure is not None:
        return outcome
    state = RunState.PREEMPTED if failure.code == PREEMPTED else RunState.FAILED
    return Outcome(
        state,
        failure.code,
        outcome.node_codes,
        outcome.first_failed,
        failure,
        outcome.stopped,
        noticed_at=outcome.noticed_at,
        ended_at=outcome.ended_at,
    )

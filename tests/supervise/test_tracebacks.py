"""The console's view of ranks failing together: the first failure's traceback is shown whole, the tracebacks of
ranks that die after it stay in the node logs (one note says where), every other line streams as it comes, and
nothing is held longer than the hold's bounds. Lines are the shapes torchrun and torch 2.13 print (from a real
2-node run of tests/launcher/scripts/collective_crash.py)."""

import io
import os
import time

from launcher.supervise import tracebacks
from launcher.supervise.console import Console, follow_node
from launcher.supervise.ranks_view import RanksView
from launcher.supervise.tracebacks import HOLD_SECONDS, WINDOW, is_consequence

GLOO = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
        "peer [127.0.0.1]:14226. This is typically caused by a remote worker crashing. Check the logs of the remote "
        "worker before reporting an error. GLHF! 🏖️")


def failing(tag="[node0/rank1]", r=1):
    return [f"{tag} [rank{r}]: Traceback (most recent call last):",
            f'{tag} [rank{r}]:   File "/w/collective_crash.py", line 41, in <module>',
            f"{tag} [rank{r}]:     load_batch(step)",
            f'{tag} [rank{r}]:   File "/w/collective_crash.py", line 33, in load_batch',
            f"{tag} [rank{r}]:     raise ValueError(f\"bad batch at step {{step}}: column 'label' is empty\")",
            f"{tag} [rank{r}]: ValueError: bad batch at step 3: column 'label' is empty"]


def survivor(tag="[node0/rank0]", r=0, exception=GLOO):
    return [f"{tag} [rank{r}]: Traceback (most recent call last):",
            f'{tag} [rank{r}]:   File "/w/collective_crash.py", line 43, in <module>',
            f"{tag} [rank{r}]:     accelerator.backward(loss)",
            f"{tag} [rank{r}]:     ^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'{tag} [rank{r}]:   File "/v/torch/autograd/graph.py", line 979, in _engine_run_backward',
            f"{tag} [rank{r}]:     return Variable._execution_engine.run_backward(",
            f"{tag} [rank{r}]: {exception}"]


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def feed_all(view, lines):
    return [shown for line in lines for shown in view.feed(line)]


def test_the_first_failure_is_shown_and_the_ranks_that_died_of_it_are_not():
    view = RanksView("c4")
    shown = feed_all(view, ["[node0/rank0] rank 0 step 2", "[node0/rank1] rank 1 step 2", *failing(), *survivor(),
                            *survivor("[node1/rank2]", 2), *survivor("[node1/rank3]", 3)])
    assert shown == ["[node0/rank0] rank 0 step 2", "[node0/rank1] rank 1 step 2", *failing()]
    assert view.take_notes() == [
        "kit: rank 0 failed too (RuntimeError: Connection closed by peer [127.0.0.1]:14226); its traceback, and those "
        "of other ranks failing after the first, are in the node logs only: kit logs c4 --rank 0"]
    assert view.take_notes() == [] and feed_all(view, survivor("[node1/rank2]", 2)) == []   # said once


def test_the_failure_is_shown_even_when_the_others_errors_arrive_first():
    # Another node's stream may bring the survivors' errors before the failing rank's own traceback.
    view = RanksView("c4")
    assert feed_all(view, [*survivor(), *survivor("[node0/rank1]", 1)]) == []
    assert feed_all(view, failing("[node1/rank3]", 3)) == failing("[node1/rank3]", 3)


def test_a_rank_that_dies_without_a_traceback_leaves_only_kept_ones():
    view = RanksView("e4")
    assert feed_all(view, ["[node0/rank2] rank 2 gives up at step 3", *survivor(), *survivor("[node0/rank3]", 3)]) \
        == ["[node0/rank2] rank 2 gives up at step 3"]
    assert len(view.take_notes()) == 1


def test_other_ranks_own_errors_soon_after_the_first_are_kept_back_later_ones_shown():
    clock = Clock()
    view = RanksView("w", clock=clock)
    assert feed_all(view, failing()) == failing()
    clock.now += 5
    assert feed_all(view, failing("[node0/rank2]", 2)) == []   # the same bug on another rank, 5 s later
    clock.now += WINDOW
    assert feed_all(view, failing("[node0/rank3]", 3)) == failing("[node0/rank3]", 3)   # a new failure


def test_every_other_stream_stays_live_while_a_traceback_is_held():
    view = RanksView("r")
    held = failing()
    assert feed_all(view, held[:3]) == []
    assert view.feed("[node0/rank0] rank 0 step 3") == ["[node0/rank0] rank 0 step 3"]
    assert view.feed("[node1] a launcher line") == ["[node1] a launcher line"]
    assert feed_all(view, held[3:]) == held


def test_a_held_traceback_is_released_within_its_bounds():
    clock = Clock()
    view = RanksView("r", clock=clock)
    start = failing()[:2]
    assert feed_all(view, start) == [] and view.holding
    clock.now += HOLD_SECONDS - 0.1
    assert view.expire() == []
    clock.now += 0.2
    assert view.expire() == start and not view.holding   # its rank went silent mid-traceback: shown as it is
    endless = ["[node0/rank2] [rank2]: Traceback (most recent call last):"] + \
              [f'[node0/rank2] [rank2]:   File "/w/deep.py", line {i}, in f' for i in range(tracebacks.HOLD_LINES - 1)]
    fresh = RanksView("r", clock=clock)
    assert feed_all(fresh, endless) == endless   # released at the line bound, not held on
    assert not fresh.holding


def test_a_nodes_end_releases_what_its_ranks_hold():
    view = RanksView("r")
    assert feed_all(view, failing("[node1/rank3]", 3)[:3]) == []
    assert view.finish(0) == [] and view.holding       # node 0's end leaves node 1's stream held
    assert view.finish(1) == failing("[node1/rank3]", 3)[:3]


def test_chained_tracebacks_follow_their_first_part():
    chain = ["[node0/rank1] ", "[node0/rank1] The above exception was the direct cause of the following exception:",
             "[node0/rank1] ", "[node0/rank1] Traceback (most recent call last):",
             '[node0/rank1]   File "/w/train.py", line 9, in <module>', "[node0/rank1] RuntimeError: step failed"]
    view = RanksView("r")
    first = failing("[node0/rank1]", 1)
    assert feed_all(view, first + chain) == first + chain       # the first failure, whole
    kept = [ln.replace("rank1", "rank0") for ln in chain]
    assert feed_all(view, survivor() + kept) == []              # a kept one's continuation stays kept
    clock = Clock()
    late = RanksView("r", clock=clock)
    feed_all(late, survivor())
    clock.now += 10                                             # past its trail: the rank's lines show again
    assert late.feed("[node0/rank0] saving checkpoint") == ["[node0/rank0] saving checkpoint"]


def test_a_one_process_nodes_traceback_is_named_by_node():
    view = RanksView("n")
    own = [ln.replace("[node1/rank1] [rank1]: ", "[node1] ") for ln in failing("[node1/rank1]", 1)]
    assert feed_all(view, own) == own
    feed_all(view, [ln.replace("[node0/rank0] [rank0]: ", "[node0] ") for ln in survivor()])
    assert view.take_notes()[0].endswith("kit logs n --node 0")


def test_what_counts_as_dying_of_another_ranks_failure():
    assert is_consequence(GLOO)
    assert is_consequence("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Read error "
                          "[127.0.0.1]:20903: Connection reset by peer")
    assert is_consequence("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
                          "process exited or there was a network error, NCCL version 2.21.5")
    assert not is_consequence("ValueError: bad batch at step 3: column 'label' is empty")
    assert not is_consequence("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")


def test_the_console_releases_a_held_traceback_while_its_rank_is_silent(monkeypatch):
    monkeypatch.setattr(tracebacks, "HOLD_SECONDS", 0.3)
    out = io.StringIO()
    console = Console(out, tty=False, run_id="r")
    r, w = os.pipe()
    reader = follow_node(r, 0, console)
    start = "".join(ln + "\n" for ln in failing()[:3]).encode()
    os.write(w, start)
    time.sleep(0.1)
    assert out.getvalue() == ""                       # held: its exception line has not come
    deadline = time.monotonic() + 5
    while out.getvalue() == "" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.getvalue() == start.decode()           # released by the console's tick, the pipe still open
    os.write(w, b"[node0/rank1] still here\n")
    os.close(w)
    reader.join(timeout=5)
    assert out.getvalue().endswith("[node0/rank1] still here\n")


def test_the_first_cause_is_a_ranks_own_error_not_a_collective_that_lost_its_peer():
    from launcher.status import Failure
    from launcher.supervise.tracebacks import first_cause
    aborted = Failure(0, "n1", 0, 134, "killed by SIGABRT", GLOO)
    raised = Failure(1, "n2", 3, 1, "exit code 1", "ValueError: bad batch at step 3: column 'label' is empty")
    stopped = Failure(1, "n2", 3, 143, "killed by SIGTERM", "ValueError: bad batch")
    # Seen on SLURM: node 0 (whose rank aborted in the collective) ended before node 1 (whose rank raised).
    assert first_cause([aborted, raised]) is raised
    assert first_cause([raised, aborted]) is raised
    assert first_cause([aborted, stopped]) is aborted   # a node stopped by the teardown is no cause
    assert first_cause([aborted]) is aborted and first_cause([]) is None

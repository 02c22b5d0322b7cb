"""Library warnings every rank prints reach the console once (the node logs keep every copy), and a rank's last
words in the failure line are never a warning. Lines are the shapes Python's warnings module, DeepSpeed's logger and
torch's C++ and glog-style logs print."""

import pytest

from launcher.supervise.failure import last_words, summarize
from launcher.supervise.ranks_view import RanksView
from launcher.supervise.repeats import warning_key, without_warnings

FUTURE = ("/w/collective_crash.py:27: FutureWarning: `batch_first` is deprecated and will be removed in a future "
          "release")
SOURCE = '  warnings.warn("`batch_first` is deprecated and will be removed in a future release", FutureWarning)'
ACCELERATE = ("/v/accelerate/accelerator.py:498: UserWarning: `log_with=tensorboard` was passed but no supported "
              "trackers are currently installed.")
DEEPSPEED = "[2026-12-06 21:30:0{s},12{s}] [INFO] [comm.py:658:init_distributed] cdb=None"
GLOO = ("[W1206 21:30:0{s}.12345678{s} ProcessGroupGloo.cpp:727] Warning: Unable to resolve hostname to a (local) "
        "address. Using the loopback address as fallback. (function operator())")
GLOG = "W1206 21:36:1{s}.878000 2395{s} torch/distributed/c10d_logger.py:83] [Rank {r}] barrier took 3.1 s"


def _every_rank(view, ranks, text_of):
    return [shown for r in range(ranks) for shown in view.feed(f"[node{r // 2}/rank{r}] {text_of(r)}")]


def test_a_warning_every_rank_prints_is_shown_once_with_its_source_line():
    view = RanksView()
    lines = [f"[node{r // 2}/rank{r}] {text}" for r in range(4) for text in (FUTURE, SOURCE)]
    assert [s for ln in lines for s in view.feed(ln)] == lines[:2]
    assert view.feed("[node1/rank3] rank 3 step 0") == ["[node1/rank3] rank 3 step 0"]   # after the source line


@pytest.mark.parametrize("template", [DEEPSPEED, GLOO, GLOG])
def test_stamped_library_lines_are_merged_whatever_their_time_pid_and_rank(template):
    view = RanksView()
    shown = _every_rank(view, 4, lambda r: template.format(s=r, r=r))
    assert shown == [f"[node0/rank0] {template.format(s=0, r=0)}"]


def test_a_ranks_own_lines_are_never_merged():
    view = RanksView()
    assert len(_every_rank(view, 4, lambda r: "epoch 1 done")) == 4
    assert len(_every_rank(view, 4, lambda r: "loss 0.4213")) == 4
    assert len(_every_rank(view, 2, lambda r: ACCELERATE)) == 1
    assert warning_key("ValueError: bad batch at step 3") is None


def test_a_ranks_last_words_are_never_a_warning(tmp_path):
    assert without_warnings(["rank 2 gives up at step 3", FUTURE, SOURCE]) == ["rank 2 gives up at step 3"]
    log = "\n".join(["[node0/rank2] rank 2 gives up at step 3", f"[node0/rank2] {FUTURE}", f"[node0/rank2] {SOURCE}"])
    assert last_words(log.splitlines(), 0, 2) == "rank 2 gives up at step 3"
    # torchrun's teed stderr of the rank: the warning is its last line there.
    stderr = tmp_path / "node0.ranks" / "abc" / "attempt_0" / "2" / "stderr.log"
    stderr.parent.mkdir(parents=True)
    stderr.write_text(f"[rank2]: {FUTURE}\n[rank2]: {SOURCE}\n")
    table = ("Root Cause (first observed failure):\n[0]:\n  rank      : 2 (local_rank: 2)\n  exitcode  : 9 (pid: 7)\n")
    failure = summarize(0, "localhost", 1, log + "\n" + table, {}, ranks_dir=str(tmp_path / "node0.ranks"),
                        procs_per_node=4)
    assert (failure.rank, failure.code, failure.last_line) == (2, 9, "rank 2 gives up at step 3")

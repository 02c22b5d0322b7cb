"""The one-line failure summary, from real torchrun output shapes."""

import importlib

from launcher.supervise.failure import TRAIN_EXIT_CODES, PREEMPTED, summarize, summary_line
from launcher.supervise.noise import NoiseFilter

TORCHRUN_FAILURE = """\
[node1/rank1] loading data
[node1/rank1] bad data: /data/x.csv:1: missing column 'text' (columns: a, b)
E1203 12:17:07.426000 5912 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 4) local_rank: 0
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/accelerate/commands/launch.py", line 1450, in <module>
    main()
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-03_12:17:07
  host      : localhost
  rank      : 1 (local_rank: 0)
  exitcode  : 4 (pid: 5956) 
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

SINGLE_PROCESS = """\
Traceback (most recent call last):
  File "/job/script.py", line 3, in <module>
    raise ValueError("learning rate must be positive")
ValueError: learning rate must be positive
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/accelerate/commands/launch.py", line 1450, in <module>
    main()
subprocess.CalledProcessError: Command '['python', 'script.py']' returned non-zero exit status 1.
"""


def test_torchrun_failure_names_rank_code_and_cause():
    f = summarize(1, "gpu-b", 1, TORCHRUN_FAILURE)
    assert (f.node, f.rank, f.code, f.meaning) == (1, 1, 4, "bad data")
    assert f.last_line == "bad data: /data/x.csv:1: missing column 'text' (columns: a, b)"
    assert summary_line("r", "failed", f) == ("kit: run r failed: node 1 (gpu-b) rank 1 exited 4 (bad data): "
                                              "bad data: /data/x.csv:1: missing column 'text' (columns: a, b)")


def test_signal_and_unknown_codes():
    killed = TORCHRUN_FAILURE.replace("exitcode  : 4", "exitcode  : -9")
    assert summarize(0, "h", 1, killed).meaning == "killed by SIGKILL"
    assert summarize(0, "h", 1, killed).code == 137
    assert summarize(0, "h", 1, TORCHRUN_FAILURE, known={}).meaning == "exit code 4"
    pre = summarize(0, "h", 1, TORCHRUN_FAILURE.replace("exitcode  : 4", f"exitcode  : {PREEMPTED}"))
    assert pre.preempted and pre.meaning == "preempted, requeue me"


def test_single_process_job_keeps_its_own_traceback_and_code():
    f = summarize(0, "h", 1, SINGLE_PROCESS, known={})
    assert f.rank is None and f.code == 1
    assert f.last_line == "ValueError: learning rate must be positive"
    noise = NoiseFilter()
    shown = [line for raw in SINGLE_PROCESS.splitlines() for line in noise.feed(raw)] + noise.finish()
    assert shown[-1] == "ValueError: learning rate must be positive"
    assert not any("CalledProcessError" in line or "accelerate/commands" in line for line in shown)


def test_torchrun_noise_stays_off_the_terminal():
    noise = NoiseFilter()
    lines = [f"[node1] {raw}" if not raw.startswith("[node") else raw for raw in TORCHRUN_FAILURE.splitlines()]
    shown = [line for raw in lines for line in noise.feed(raw)] + noise.finish()
    assert shown == ["[node1/rank1] loading data",
                     "[node1/rank1] bad data: /data/x.csv:1: missing column 'text' (columns: a, b)"]


def test_setup_failure_is_its_own_cause():
    log = "kit: node setup failed (exit 1): source venv/bin/activate\n"
    f = summarize(0, "h", 1, "bash: venv/bin/activate: No such file or directory\n" + log)
    assert f.meaning == "setup failed" and "source venv/bin/activate" in f.last_line


def test_kit_knows_the_training_modules_exit_codes():
    train = importlib.import_module("train")
    codes = {getattr(train, n): n for n in dir(train) if n.startswith("EXIT_")}
    assert set(codes) == set(TRAIN_EXIT_CODES) | {PREEMPTED}


def test_the_ranks_own_stderr_file_outranks_the_interleaved_node_log(tmp_path):
    """torchrun tails a rank's stdout and stderr in two threads: the node log's last line may be stdout."""
    attempt = tmp_path / "node1.ranks" / "none_x" / "attempt_0" / "0"
    attempt.mkdir(parents=True)
    (attempt / "stderr.log").write_text("\rtrain: 1/9\nbad data: /x.csv:1: missing column 'text'\n\rtrain: 2/9\n")
    log = TORCHRUN_FAILURE.replace("[node1/rank1] bad data: /data/x.csv:1: missing column 'text' (columns: a, b)\n",
                                   "") + "[node1/rank1] probe ready\n"
    f = summarize(1, "h", 1, log, ranks_dir=str(tmp_path / "node1.ranks"), procs_per_node=1)
    assert f.last_line == "bad data: /x.csv:1: missing column 'text'"


def test_a_silent_root_cause_rank_borrows_the_main_processs_words(tmp_path):
    """A collective check fails on every rank; only the main process explains, and torchrun may name another
    rank (here rank 1, on node 1, which said nothing) as the root cause."""
    main = tmp_path / "node0.ranks" / "none_a" / "attempt_0" / "0"
    main.mkdir(parents=True)
    (main / "stderr.log").write_text("world check failed: expected world size 4, found 2\n")
    silent = tmp_path / "node1.ranks" / "none_b" / "attempt_0" / "0"
    silent.mkdir(parents=True)
    (silent / "stderr.log").write_text("\rtrain: 1/9\n")
    log = TORCHRUN_FAILURE.replace("[node1/rank1] bad data: /data/x.csv:1: missing column 'text' (columns: a, b)\n",
                                   "").replace("[node1/rank1] loading data\n", "")
    f = summarize(1, "h", 3, log.replace("exitcode  : 4", "exitcode  : 3"),
                  ranks_dir=str(tmp_path / "node1.ranks"), procs_per_node=1)
    assert (f.rank, f.code, f.meaning) == (1, 3, "world check failed")
    assert f.last_line == "rank 0 said: world check failed: expected world size 4, found 2"


def test_a_known_code_prefers_the_rank_that_explains_it(tmp_path):
    """The root-cause rank's last stderr line is a library's chatter; the main process said why (code 5)."""
    for node, text in ((0, "resume refused: strategy ddp -> deepspeed_zero2; use --resume no\n"),
                       (1, "DeepSpeed op built successfully\n")):
        d = tmp_path / f"node{node}.ranks" / "none_a" / "attempt_0" / "0"
        d.mkdir(parents=True)
        (d / "stderr.log").write_text(text)
    log = TORCHRUN_FAILURE.replace("exitcode  : 4", "exitcode  : 5")
    f = summarize(1, "h", 1, log, ranks_dir=str(tmp_path / "node1.ranks"), procs_per_node=1)
    assert f.last_line == "rank 0 said: resume refused: strategy ddp -> deepspeed_zero2; use --resume no"
    # An unknown program's codes mean nothing: its own last line stays.
    f = summarize(1, "h", 1, log, known={}, ranks_dir=str(tmp_path / "node1.ranks"), procs_per_node=1)
    assert f.last_line == "DeepSpeed op built successfully"


def test_the_explanation_need_not_be_the_last_line(tmp_path):
    d = tmp_path / "node0.ranks" / "none_a" / "attempt_0" / "0"
    d.mkdir(parents=True)
    (d / "stderr.log").write_text("bad data: /x.csv:1: missing column 'text'\nsome library: shutting down\n")
    f = summarize(0, "h", 1, TORCHRUN_FAILURE.replace("rank      : 1", "rank      : 0"),
                  ranks_dir=str(tmp_path / "node0.ranks"), procs_per_node=1)
    assert f.last_line == "bad data: /x.csv:1: missing column 'text'"


def test_the_agents_c10d_warnings_stay_off_the_terminal():
    noise = NoiseFilter()
    agent = "[node0] [W1203 16:44:59.899074247 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3"
    rank = "[node0/rank0] [W1203 16:44:59.899074247 socket.cpp:207] [c10d] a rank's own line is never noise"
    assert noise.feed(agent) == [] and noise.feed(rank) == [rank]


def test_a_ranks_exception_outranks_the_chatter_after_it(tmp_path):
    d = tmp_path / "node1.ranks" / "none_a" / "attempt_0" / "0"
    d.mkdir(parents=True)
    (d / "stderr.log").write_text(
        "[rank1]: Traceback (most recent call last):\n"
        "[rank1]:   File \"/job/probe.py\", line 76, in <module>\n"
        "[rank1]:     with open(path, \"w\") as f:\n"
        "[rank1]:          ^^^^^^^^^^^^^^^\n"
        "[rank1]: FileNotFoundError: [Errno 2] No such file or directory: 'out/rank1.json'\n"
        "terminate called without an active exception\n")
    f = summarize(1, "h", 1, TORCHRUN_FAILURE.replace("exitcode  : 4", "exitcode  : -6"), known={},
                  ranks_dir=str(tmp_path / "node1.ranks"), procs_per_node=1)
    assert (f.code, f.meaning) == (134, "killed by SIGABRT")
    assert f.last_line == "FileNotFoundError: [Errno 2] No such file or directory: 'out/rank1.json'"


def test_a_megabyte_last_line_is_cut_in_the_failure_and_the_record():
    from launcher.status import MAX_LAST_LINE, Failure
    from launcher.supervise.failure import cause
    f = summarize(1, "n2", 3, "[node1/rank1] " + "x" * 5_000_000 + "\n", known={})
    assert len(f.last_line) <= MAX_LAST_LINE + 6 and f.last_line.endswith(" [...]")
    assert len(cause(f)) < 600
    assert Failure(0, "h", None, 1, "m", "short").last_line == "short"


GLOO_CLOSED = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
               "closed by peer [127.0.0.1]:15272. This is typically caused by a remote worker crashing.")
ABORTED_FIRST = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
crash.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-06_22:01:41
  host      : localhost
  rank      : 2 (local_rank: 2)
  exitcode  : 1 (pid: 31790)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
[2]:
  time      : 2026-12-06_22:01:41
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 31788)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 31788
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_22:01:40
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 31789)  (SIGABRT)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 31789
============================================================
"""


def _tee(tmp_path, said: dict) -> None:
    """Each local rank's stderr as torchrun tees it (`--tee 3 --log_dir`) under node0.ranks."""
    for local, text in said.items():
        d = tmp_path / "node0.ranks" / "none_a" / "attempt_0" / str(local)
        d.mkdir(parents=True)
        (d / "stderr.log").write_text(text)


def test_a_rank_that_died_of_anothers_failure_is_not_its_cause(tmp_path):
    """Seen on 4 gloo ranks: rank 2 raised; rank 1's collective lost its peer and it aborted (SIGABRT) before rank
    2's interpreter exited, so torchrun's root cause is rank 1. The cause is rank 2's own error."""
    said = {0: "", 1: f"[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/w/crash.py\", line 43\n"
                      f"[rank1]: {GLOO_CLOSED}\nterminate called without an active exception\n",
            2: "[rank2]: Traceback (most recent call last):\n[rank2]:   File \"/w/crash.py\", line 41\n"
               "[rank2]: ValueError: bad batch at step 3: column 'label' is empty\n"}
    _tee(tmp_path, said)
    f = summarize(0, "localhost", 1, ABORTED_FIRST, known={}, ranks_dir=str(tmp_path / "node0.ranks"),
                  procs_per_node=4)
    assert (f.rank, f.code, f.last_line) == (2, 1, "ValueError: bad batch at step 3: column 'label' is empty")
    # Without another rank's own error to point at, the launcher's root cause stands.
    (tmp_path / "node0.ranks" / "none_a" / "attempt_0" / "2" / "stderr.log").write_text("")
    f = summarize(0, "localhost", 1, ABORTED_FIRST, known={}, ranks_dir=str(tmp_path / "node0.ranks"),
                  procs_per_node=4)
    assert (f.rank, f.code) == (1, 134) and "Connection closed by peer" in f.last_line


def test_the_cause_rank_stopped_by_its_launcher_while_exiting_exited_1(tmp_path):
    """Seen on 2 SSH hosts: rank 3 raised; rank 2 aborted in the collective first, and torchrun's SIGTERM to the
    survivors reached rank 3 while its interpreter was exiting (-15 in the table). Its exception ended it: exit 1,
    not "killed by SIGTERM" (which would read as a signal from outside and make the run restartable)."""
    table = ABORTED_FIRST.replace("exitcode  : 1 (pid: 31790)", "exitcode  : -15 (pid: 31790)  (SIGTERM)")
    said = {0: "", 1: f"[rank1]: Traceback (most recent call last):\n[rank1]: {GLOO_CLOSED}\n",
            2: "[rank2]: Traceback (most recent call last):\n[rank2]:   File \"/w/crash.py\", line 41\n"
               "[rank2]: ValueError: bad batch at step 3: column 'label' is empty\n"}
    _tee(tmp_path, said)
    f = summarize(0, "localhost", 1, table, known={}, ranks_dir=str(tmp_path / "node0.ranks"), procs_per_node=4)
    assert (f.rank, f.code, f.meaning) == (2, 1, "exit code 1")


def test_a_rank_that_exited_by_itself_is_the_cause_of_the_others_abort(tmp_path):
    """Seen on 2 local processes: rank 1 printed its last words and exited 9 (no traceback); rank 0 aborted in the
    collective first, so torchrun's root cause is rank 0. The cause is the rank that ended by itself."""
    table = ABORTED_FIRST.replace("exitcode  : 1 (pid: 31790)", "exitcode  : 9 (pid: 31790)")
    log = "[node0/rank2] rank 2 gives up at step 3\n" + table
    _tee(tmp_path, {local: f"[rank1]: Traceback (most recent call last):\n[rank1]: {GLOO_CLOSED}\n"
                    if local == 1 else "" for local in range(4)})
    f = summarize(0, "localhost", 1, log, known={}, ranks_dir=str(tmp_path / "node0.ranks"), procs_per_node=4)
    assert (f.rank, f.code, f.last_line) == (2, 9, "rank 2 gives up at step 3")


GLOO_RESET = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
              "[127.0.0.1]:7559: Connection reset by peer. This is typically caused by a remote worker hanging or "
              "bugs in the application.")
WARNED = ("/w/crash.py:30: FutureWarning: `batch_first` is deprecated and will be removed in a future release\n"
          "  warnings.warn(\"`batch_first` is deprecated and will be removed in a future release\", FutureWarning)\n")
# Node 1 of 2 nodes x 2 ranks (seen, issue 41): rank 3 was SIGKILLed; rank 2, its neighbour, died in the gradient
# all-reduce with torch's `[rank2]:` traceback; torchrun names rank 3 the root cause.
KILLED_BESIDE = "".join(f"[node1/rank{r}] {ln}\n" for r in (3, 2) for ln in WARNED.splitlines()) + """\
[node1/rank2] [rank2]: Traceback (most recent call last):
[node1/rank2] [rank2]:   File "/w/crash.py", line 51, in <module>
[node1/rank2] [rank2]:     accelerator.backward(loss)
[node1/rank2] [rank2]: """ + GLOO_RESET + """
W1207 17:26:57.725000 12350 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 12752 closing signal SIGTERM
E1207 17:26:58.122000 12350 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 12756) of binary: /venv/bin/python
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
/w/crash.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-07_17:26:58
  host      : localhost
  rank      : 2 (local_rank: 0)
  exitcode  : -15 (pid: 12752)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 12752
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-07_17:26:57
  host      : localhost
  rank      : 3 (local_rank: 1)
  exitcode  : -9 (pid: 12756)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 12756
============================================================
"""


def _tee_node(tmp_path, node: int, said: dict) -> str:
    for local, text in said.items():
        d = tmp_path / f"node{node}.ranks" / "none_a" / "attempt_0" / str(local)
        d.mkdir(parents=True)
        (d / "stderr.log").write_text(text)
    return str(tmp_path / f"node{node}.ranks")


def test_a_killed_rank_is_never_given_its_neighbours_words(tmp_path):
    """Issue 41: `rank 3 killed by SIGKILL ...: [rank2]: RuntimeError: ...` put rank 2's words under rank 3's name.
    Rank 3 said nothing of its death (a warning at start only): the cause quotes nothing."""
    ranks = _tee_node(tmp_path, 1, {0: WARNED + "".join(f"[rank2]: {ln}\n" for ln in (
        "Traceback (most recent call last):", "  File \"/w/crash.py\", line 51, in <module>", GLOO_RESET)),
        1: WARNED})
    for where in (ranks, ""):   # with the ranks' teed stderr (local, SSH, SLURM) and from the node log alone
        f = summarize(1, "n2", 137, KILLED_BESIDE, known={}, ranks_dir=where, procs_per_node=2)
        assert (f.rank, f.code, f.meaning) == (3, 137, "killed by SIGKILL")
        assert f.last_line == "", (where, f.last_line)
    # Its own words are quoted, without torch's prefix.
    first = "[node1/rank2] [rank2]: Traceback"
    own = KILLED_BESIDE.replace(first, "[node1/rank3] [rank3]: MemoryError: cannot grow the batch\n" + first)
    assert summarize(1, "n2", 137, own, known={}, procs_per_node=2).last_line == "MemoryError: cannot grow the batch"


def test_a_killed_rank_is_never_given_the_main_processs_banner(tmp_path):
    """The other run of issue 41: the quoted last words were the main process's `precision check:` banner."""
    log = KILLED_BESIDE.replace("[node1/rank3]", "[node0/rank1]") \
        .replace("[node1/rank2] [rank2]", "[node0/rank0] [rank0]") \
        .replace("rank      : 3 (local_rank: 1)", "rank      : 1 (local_rank: 1)")
    banner = "[node0/rank0] precision check: mixed precision no: a forward computes in float32 (2 linear layers)\n"
    log = log.replace("W1207 17:26:57", banner + "W1207 17:26:57", 1)
    for where in (_tee_node(tmp_path, 0, {0: WARNED, 1: WARNED}), ""):
        f = summarize(0, "n1", 137, log, ranks_dir=where, procs_per_node=2)
        assert (f.rank, f.last_line) == (1, ""), (where, f.last_line)

"""Real local runs and kit's terminal: a closed pipe stalls nothing, progress moves live on a terminal."""

import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest
import yaml

from tests.launcher.localrun import LOCAL_CLUSTER, PROBE, pids_of_run, wait_for, write_job


@pytest.mark.slow
def test_closed_output_pipe_never_stalls_the_run(tmp_path):
    """`kit submit ... | head -n 2`: kit's stdout closes early while the ranks write megabytes."""
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--flood", "2000000", "--linger", "1"])
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", job, "--cluster", LOCAL_CLUSTER,
                             "--run-id", "closed-pipe"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.readline()
    proc.stdout.close()  # what `head -n 2` does once it has its lines
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()[-2000:]
    log = (tmp_path / "runs" / "closed-pipe" / "node1.log").read_text()
    assert "probe rank 1 flooded" in log and log.count("x" * 99) == 20000
    # (Its own run id: processes are found machine-wide by id, and tests/train/test_pipeline.py runs one "piped".)
    assert pids_of_run("closed-pipe") == []


def _under_a_terminal(tmp_path, procs: int, run_id: str) -> subprocess.Popen:
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=1, procs=procs, args=["--out", str(out), "--progress", "40"])
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", job, "--cluster", LOCAL_CLUSTER,
                             "--run-id", run_id], cwd=tmp_path, stdout=follower, stderr=follower,
                            stdin=subprocess.DEVNULL)
    os.close(follower)
    return proc, leader


def _screen(proc, leader) -> str:
    screen = b""
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([leader], [], [], 0.5)[0]:
            try:
                screen += os.read(leader, 65536)
            except OSError:
                break
    proc.wait(timeout=30)
    text = screen.decode(errors="replace")
    assert proc.returncode == 0, text[-2000:]
    return text


@pytest.mark.slow
def test_progress_bar_moves_live_when_kit_writes_to_a_terminal(tmp_path):
    text = _screen(*_under_a_terminal(tmp_path, 1, "tty"))
    # Every redraw reached the terminal, drawn over the previous one (no newline between them).
    assert "\r\x1b[K[node0] step 1/40\r\x1b[K[node0] step 2/40" in text
    assert "step 40/40" in text
    log = (tmp_path / "runs" / "tty" / "node0.log").read_text()
    assert "step 1/40" in log and "step 40/40" not in log  # the log keeps one redraw per 30 s


@pytest.mark.slow
def test_ranks_progress_through_torchruns_tee_is_drawn_in_place_without_blank_lines(tmp_path):
    # Two processes: torchrun tees each rank's output from a file it reads in text mode, where a "\r" would
    # end a line (each redraw an empty tagged line, then a new line): kit's mark survives it.
    text = _screen(*_under_a_terminal(tmp_path, 2, "tty2"))
    for rank in (0, 1):
        assert f"\r\x1b[K[node0/rank{rank}] step 40/40" in text
        assert f"[node0/rank{rank}] \r\n" not in text and f"[node0/rank{rank}]\r\n" not in text
    redraws_on_their_own_line = [ln for ln in text.split("\n") if "step " in ln and "\x1b[K" not in ln]
    assert redraws_on_their_own_line == []
    log = (tmp_path / "runs" / "tty2" / "node0.log").read_text()
    assert log.count("step ") == 1 and "\x1b" not in log and "\r" not in log   # one redraw per 30 s, bare


@pytest.mark.slow
def test_a_rank_that_prints_without_flushing_is_seen_at_once(tmp_path):
    """kit's submitter may have no PYTHONUNBUFFERED; the plan sets it, so a plain print() reaches the log live."""
    script = os.path.join(os.path.dirname(PROBE), "quiet_printer.py")
    job = tmp_path / "quiet.yaml"
    job.write_text(yaml.safe_dump({"name": "quiet", "entrypoint": {"script": script}, "nodes": 1,
                                   "procs_per_node": 2}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", str(job), "--cluster", LOCAL_CLUSTER,
                             "--run-id", "quiet-run"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        log = tmp_path / "runs" / "quiet-run" / "node0.log"
        said = lambda: log.exists() and log.read_text().count("says hello without flushing") == 2  # noqa: E731
        assert wait_for(said, timeout=90), log.read_text() if log.exists() else "no node log"
        assert proc.poll() is None and pids_of_run("quiet-run"), "the ranks must still be running"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    assert wait_for(lambda: not pids_of_run("quiet-run"), timeout=30)

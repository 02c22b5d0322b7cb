"""Teardown with realistic ranks: ones that need 20 s to save on SIGTERM, and ones that ignore it.

After Ctrl-C, `kit cancel`, a failed rank and `kill -9` of kit: no process of the run is left, and the ranks'
checkpoints are complete.
"""

import json
import os
import signal
import time

import pytest

from tests.launcher.localrun import LOCAL_CLUSTER, kit, kit_background, pids_of_run, reports, wait_for, write_job

SAVE_SECONDS = 20


def _start(tmp_path, run_id, *probe_args, detach=False, nodes=2):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, nodes=nodes, args=["--out", str(out), "--linger", "600", *probe_args])
    argv = ("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", run_id) + (("--detach",) if detach else ())
    if detach:
        result = kit(*argv, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        proc = None
    else:
        proc = kit_background(*argv, cwd=tmp_path)
    assert wait_for(lambda: len(reports(out)) == nodes), "ranks never reported"
    return proc, out


def _status(tmp_path, run_id) -> dict:
    return json.loads((tmp_path / "runs" / run_id / "status.json").read_text())


def _checkpoints_complete(out, ranks=(0, 1)) -> bool:
    return all((out / f"ckpt{r}").is_file() and (out / f"ckpt{r}").read_text().count("piece") == SAVE_SECONDS * 10
               for r in ranks)


def _finish(proc, timeout=120):
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.stdout.read()


@pytest.mark.slow
def test_ctrl_c_waits_for_slow_checkpoints_then_leaves_nothing(tmp_path):
    proc, out = _start(tmp_path, "slow-ctrl-c", "--on-term", f"save:{SAVE_SECONDS}")
    proc.send_signal(signal.SIGINT)
    console = _finish(proc)
    assert proc.returncode == 130, console
    assert _checkpoints_complete(out), console
    assert pids_of_run("slow-ctrl-c") == []
    assert _status(tmp_path, "slow-ctrl-c")["state"] == "cancelled"
    assert console.strip().splitlines()[-1].startswith("kit: run slow-ctrl-c cancelled")
    assert "Traceback" not in console


@pytest.mark.slow
def test_cancel_of_detached_run_waits_for_slow_checkpoints(tmp_path):
    _, out = _start(tmp_path, "slow-cancel", "--on-term", f"save:{SAVE_SECONDS}", detach=True)
    result = kit("cancel", "slow-cancel", cwd=tmp_path, timeout=150)
    assert result.returncode == 0, result.stderr
    assert "no process of it is left" in result.stdout
    assert pids_of_run("slow-cancel") == []
    assert _checkpoints_complete(out)
    assert _status(tmp_path, "slow-cancel")["state"] == "cancelled"
    again = kit("cancel", "slow-cancel", cwd=tmp_path)
    assert again.returncode == 0 and "already finished (cancelled" in again.stdout


@pytest.mark.slow
def test_failed_rank_stops_the_others_after_their_save_and_names_the_cause(tmp_path):
    proc, out = _start(tmp_path, "slow-fail", "--on-term", f"save:{SAVE_SECONDS}", "--fail-rank", "1",
                       "--fail-code", "4", "--fail-message", "bad data: /x.csv:1: missing column 'text'")
    console = _finish(proc)
    assert proc.returncode == 4, console
    assert console.strip().splitlines()[-1] == (
        "kit: run slow-fail failed: node 1 (localhost) rank 1 exited 4: "
        "bad data: /x.csv:1: missing column 'text'")
    assert _checkpoints_complete(out, ranks=(0,)), console
    assert pids_of_run("slow-fail") == []
    # torchrun's traceback and failure table stay in the log, off the terminal.
    assert "ChildFailedError" not in console and "Traceback" not in console
    assert "ChildFailedError" in (tmp_path / "runs" / "slow-fail" / "node1.log").read_text()
    status = _status(tmp_path, "slow-fail")
    assert status["state"] == "failed" and status["exit_code"] == 4
    assert status["failure"]["rank"] == 1


@pytest.mark.slow
def test_kill_9_of_kit_still_tears_the_run_down(tmp_path):
    proc, out = _start(tmp_path, "slow-kill9", "--on-term", f"save:{SAVE_SECONDS}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert wait_for(lambda: pids_of_run("slow-kill9") == [], timeout=SAVE_SECONDS + 25)
    assert _checkpoints_complete(out)
    status = kit("status", "slow-kill9", cwd=tmp_path)
    assert "state lost" in status.stdout and "supervisor" in status.stdout
    assert "lost" in kit("runs", cwd=tmp_path).stdout


@pytest.mark.slow
def test_ranks_that_ignore_sigterm_are_killed_and_a_second_ctrl_c_shortens_the_wait(tmp_path):
    proc, out = _start(tmp_path, "deaf", "--on-term", "ignore")
    proc.send_signal(signal.SIGINT)
    time.sleep(3)
    assert pids_of_run("deaf"), "the first Ctrl-C must give the ranks their grace period"
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    console = _finish(proc)
    # The grace period is 40 s; the second Ctrl-C cuts it to a few seconds.
    assert time.monotonic() - started < 20, console
    assert proc.returncode == 130 and "Traceback" not in console
    assert pids_of_run("deaf") == []
    assert _status(tmp_path, "deaf")["state"] == "cancelled"


@pytest.mark.slow
def test_ranks_that_exit_at_once_do_not_cost_the_grace_period(tmp_path):
    proc, out = _start(tmp_path, "quick")
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _finish(proc)
    assert time.monotonic() - started < 15  # the grace period is 40 s
    assert pids_of_run("quick") == []


@pytest.mark.slow
def test_preempted_rank_makes_the_run_preempted(tmp_path):
    proc, out = _start(tmp_path, "preempt", "--fail-rank", "0", "--fail-code", "75", "--fail-message",
                       "preempted at step 7", nodes=1)
    console = _finish(proc)
    assert proc.returncode == 75
    assert console.strip().splitlines()[-1].startswith("kit: run preempt preempted: node 0")
    assert _status(tmp_path, "preempt")["state"] == "preempted"

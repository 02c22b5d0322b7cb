"""`kit wait RUN` on real local runs: it blocks until the run ends and exits with the run's exit code (a rank's own
code, a signal N as 128+N), for a detached run and for one that another kit follows; a run already over answers at
once; a timeout is its own code and one line, and leaves the run alone (as a Ctrl-C does); a run whose supervisor
died reads lost. `kit status` and `kit logs --follow` end with the same code."""

import json
import os
import signal
import time

import pytest
import yaml

from tests.launcher.localrun import LOCAL_CLUSTER, PROBE, kit, kit_background, pids_of_run, rank_pids, reports, \
    wait_for
from launcher.core.waiting import LOST_CODE, TIMEOUT_CODE


def _job(tmp_path, procs=2, args=(), **fields):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({"name": "waited", "entrypoint": {"script": PROBE}, "nodes": 1,
                                    "procs_per_node": procs, "args": ["--out", str(out), *args], **fields}))
    return str(path), out


def _detach(tmp_path, run_id, job):
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", run_id, "--detach", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_wait_exits_with_a_ranks_own_code_and_at_once_when_over(tmp_path):
    job, _ = _job(tmp_path, args=["--fail-rank", "1", "--fail-code", "7"])
    _detach(tmp_path, "seven", job)
    waited = kit("wait", "seven", cwd=tmp_path)
    assert waited.returncode == 7, waited.stderr
    assert waited.stderr == "kit: run seven failed: node 0 (localhost) rank 1 exited 7: probe rank 1/2 ready\n"
    started = time.monotonic()
    again = kit("wait", "seven", "--timeout", "0", cwd=tmp_path)
    assert again.returncode == 7 and time.monotonic() - started < 5
    assert kit("status", "seven", cwd=tmp_path).returncode == 7
    assert kit("logs", "seven", "--follow", cwd=tmp_path).returncode == 7


@pytest.mark.slow
def test_a_rank_killed_from_outside_is_128_plus_the_signal_for_a_followed_run(tmp_path):
    job, out = _job(tmp_path, args=["--linger", "120"])
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "oom", cwd=tmp_path)
    try:
        assert wait_for(lambda: len(reports(out)) == 2, timeout=120), "the ranks never reported"
        waiter = kit_background("wait", "oom", cwd=tmp_path)
        time.sleep(1)
        assert waiter.poll() is None, "kit wait must block while the run goes on"
        for pid in rank_pids("oom", 1):
            os.kill(pid, signal.SIGKILL)   # what the kernel's OOM killer does
        said, _ = waiter.communicate(timeout=120)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert waiter.returncode == 137, said
    assert "node 0 (localhost) rank 1 killed by SIGKILL (exit code 137; out of memory?" in said.splitlines()[-1], said
    assert proc.returncode == 137
    assert wait_for(lambda: pids_of_run("oom") == [], timeout=30)


@pytest.mark.slow
def test_a_timeout_is_its_own_code_and_leaves_the_run_alone(tmp_path):
    job, out = _job(tmp_path, args=["--linger", "120"])
    _detach(tmp_path, "slow", job)
    started = time.monotonic()
    r = kit("wait", "slow", "--timeout", "2", cwd=tmp_path)
    took = time.monotonic() - started
    assert r.returncode == TIMEOUT_CODE and took < 15, (r.returncode, took)
    assert r.stderr.startswith("kit: run slow still ") and r.stderr.endswith(
        f" after 2 s (--timeout); exit code {TIMEOUT_CODE}, the run goes on\n"), r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert wait_for(lambda: len(reports(out)) == 2, timeout=120) and pids_of_run("slow")
    assert "state running" in kit("status", "slow", cwd=tmp_path).stdout
    interrupted = kit_background("wait", "slow", cwd=tmp_path)
    time.sleep(2)
    interrupted.send_signal(signal.SIGINT)   # Ctrl-C stops the waiting, never the run
    said, _ = interrupted.communicate(timeout=30)
    assert interrupted.returncode == 130 and said.strip() == "kit: stopped waiting; run slow goes on", said
    assert pids_of_run("slow") and "state running" in kit("status", "slow", cwd=tmp_path).stdout
    waiter = kit_background("wait", "slow", cwd=tmp_path)
    assert kit("cancel", "slow", cwd=tmp_path, timeout=120).returncode == 0
    said, _ = waiter.communicate(timeout=120)
    assert waiter.returncode == 143 and "cancelled" in said, said   # kit cancel's SIGTERM, as recorded


@pytest.mark.slow
def test_a_run_whose_supervisor_died_reads_lost(tmp_path):
    job, out = _job(tmp_path, args=["--linger", "120"])
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "orphan", cwd=tmp_path)
    assert wait_for(lambda: len(reports(out)) == 2, timeout=120), "the ranks never reported"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    r = kit("wait", "orphan", cwd=tmp_path)
    assert r.returncode == LOST_CODE and r.stderr.startswith("kit: run orphan lost: its supervisor"), r.stderr
    assert wait_for(lambda: pids_of_run("orphan") == [], timeout=60)   # its watchdogs stop the nodes


@pytest.mark.slow
def test_a_restarted_run_lists_its_attempts(tmp_path):
    job, out = _job(tmp_path, args=["--linger", "6"], restarts=1)
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "twice", cwd=tmp_path)
    try:
        assert wait_for(lambda: rank_pids("twice", 1), timeout=120), "rank 1 never started"
        assert wait_for(lambda: len(reports(out)) == 2, timeout=120)
        for pid in rank_pids("twice", 1):
            os.kill(pid, signal.SIGKILL)
        assert kit("wait", "twice", cwd=tmp_path, timeout=300).returncode == 0
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    data = json.loads(kit("status", "twice", "--json", cwd=tmp_path).stdout)
    first, second = data["attempts"]
    assert (first["attempt"], first["state"], first["exit_code"]) == (1, "failed", 137), first
    assert "killed by SIGKILL" in first["cause"] and first["finished_at"] <= second["started_at"]
    assert (second["attempt"], second["state"], second["exit_code"], data["exit_code"]) == (2, "succeeded", 0, 0)
    text = kit("status", "twice", cwd=tmp_path).stdout
    assert "  attempt 1  " in text and "failed, exit 137: node 0 (localhost) rank 1 killed by SIGKILL" in text, text
    assert "  attempt 2  " in text and "succeeded, exit 0" in text, text


@pytest.mark.slow
def test_one_process_exit_code(tmp_path):
    job, _ = _job(tmp_path, procs=1, args=["--fail-rank", "0", "--fail-code", "7"])
    _detach(tmp_path, "one-seven", job)
    assert kit("wait", "one-seven", cwd=tmp_path).returncode == 7


@pytest.mark.slow
def test_one_process_killed_by_sigkill_is_137(tmp_path):
    job, out = _job(tmp_path, procs=1, args=["--linger", "120"])
    _detach(tmp_path, "one-oom", job)
    assert wait_for(lambda: len(reports(out)) == 1, timeout=120)
    for pid in pids_of_run("one-oom"):
        words = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        if words[1:2] == [PROBE.encode()] or words[2:3] == [PROBE.encode()]:   # python [-u] rank_probe.py
            os.kill(pid, signal.SIGKILL)
    assert kit("wait", "one-oom", cwd=tmp_path).returncode == 137


def _starting(tmp_path, run_id):
    """A record that reads "starting" (not over) until the test writes its end."""
    root = tmp_path / "runs"
    (root / run_id).mkdir(parents=True)
    (root / run_id / "status.json").write_text(json.dumps({"run_id": run_id, "backend": "local", "state": "starting",
                                                           "created_at": time.time()}))
    return root


def _ends_soon(root, run_id):
    import threading

    from launcher.records import RunRecord

    def end():
        time.sleep(1.5)
        RunRecord(str(root / run_id)).update_status(state="succeeded", exit_code=0, finished_at=time.time())
    thread = threading.Thread(target=end)
    thread.start()
    return thread


def test_a_timeout_of_inf_waits_for_the_end(tmp_path):
    """`--timeout inf` is no timeout (it was a traceback: OverflowError in the poll's join, exit 1)."""
    root = _starting(tmp_path, "forever")
    thread = _ends_soon(root, "forever")
    r = kit("wait", "forever", "--run-root", str(root), "--timeout", "inf", cwd=tmp_path, timeout=60)
    thread.join()
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == ["kit: run forever succeeded (exit code 0)"], r.stderr


@pytest.mark.parametrize("value", ["-1", "nan", "-inf", "soon"])
def test_a_bad_timeout_is_one_line_exit_2(tmp_path, value):
    root = _starting(tmp_path, "r")
    r = kit("wait", "r", "--run-root", str(root), f"--timeout={value}", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--timeout" in r.stderr, r.stderr


def test_the_latest_run_is_named_by_its_directory_when_its_status_has_no_id(tmp_path):
    """`kit wait` (no id: the latest run) on a record whose status.json has no run_id (a run whose status was not
    written yet, one written by hand) names the run by its directory; it said `run None` (found by mypy)."""
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"state": "succeeded", "exit_code": 0}))
    r = kit("wait", "--run-root", str(tmp_path / "runs"), cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "kit: run r1 succeeded (exit code 0)\n"

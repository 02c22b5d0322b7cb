"""kit runs / status / logs --follow / cancel on records, including damaged and finished ones."""

import json
import threading

from tests.launcher.localrun import LOCAL_CLUSTER, kit, write_job


def _record(tmp_path, run_id, **status):
    d = tmp_path / "runs" / run_id
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({"run_id": run_id, "backend": "local", **status}))
    return d


def test_one_corrupt_status_does_not_break_the_listing(tmp_path):
    _record(tmp_path, "good", state="succeeded", exit_code=0, created_at=1)
    bad = _record(tmp_path, "bad", state="running")
    (bad / "status.json").write_text('{"state": "runn')
    listing = kit("runs", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "good" in listing.stdout and "succeeded" in listing.stdout
    assert "corrupt" in listing.stdout
    status = kit("status", "bad", cwd=tmp_path)
    assert status.returncode == 2 and "status.json is unreadable" in status.stderr
    assert "Traceback" not in status.stderr


def test_cancel_of_a_finished_run_says_so(tmp_path):
    _record(tmp_path, "done", state="failed", exit_code=4)
    result = kit("cancel", "done", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == "run done: already finished (failed, exit code 4); nothing to cancel"


def test_a_running_record_whose_supervisor_is_gone_is_lost(tmp_path):
    _record(tmp_path, "orphan", state="running", supervisor_pid=2 ** 22 + 7, supervisor_start=1.0, nodes=[])
    assert "state lost" in kit("status", "orphan", cwd=tmp_path).stdout
    assert "lost" in kit("runs", cwd=tmp_path).stdout


def test_logs_follow_prints_lines_as_they_come_until_the_run_ends(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "4"])
    result = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "fol", "--detach", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    followed = {}
    thread = threading.Thread(target=lambda: followed.update(r=kit("logs", "fol", "--follow", cwd=tmp_path)))
    thread.start()
    thread.join(timeout=150)
    assert not thread.is_alive(), "--follow must return once the run has ended"
    text = followed["r"].stdout
    assert "[node0/rank0] probe rank 0/2 ready" in text and "[node1/rank1] probe rank 1/2 ready" in text
    assert json.loads((tmp_path / "runs" / "fol" / "status.json").read_text())["state"] == "succeeded"

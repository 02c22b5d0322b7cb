"""kit runs / status / logs --follow / cancel on records, including damaged and finished ones; the tentative record
that kit submit writes before its checks."""

import json
import os
import threading

import pytest

from launcher import records

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
    assert status.returncode == 74 and "status.json is unreadable" in status.stderr   # a record problem (issue 36)
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


@pytest.mark.slow
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


def _plan(tmp_path, run_id="t1"):
    from launcher.planning.build import build_plan
    from launcher.spec import Overrides, load_cluster, load_job
    job = load_job(write_job(tmp_path, name="rec"))
    cluster = load_cluster(LOCAL_CLUSTER)
    return job, cluster, build_plan(job, cluster, Overrides(), run_id)


def test_a_tentative_record_refused_by_its_block_leaves_nothing(tmp_path):
    job, cluster, plan = _plan(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(RuntimeError, match="check failed"):
        with records.tentative(str(work), plan, job, cluster) as record:
            assert (work / plan.run_dir / "status.json").exists() and plan.files
            assert all((work / rel).exists() for rel in plan.files)
            raise RuntimeError("check failed")
    assert os.listdir(work) == []   # the `runs` directory it made went too
    with records.tentative(str(work), plan, job, cluster) as record:   # the id is free again
        pass
    assert record.read_status().state == "starting"


def test_a_refused_tentative_record_keeps_what_was_there_before(tmp_path):
    job, cluster, plan = _plan(tmp_path)
    work = tmp_path / "work"
    mine = work / plan.run_dir / "notes.txt"   # a directory of that name, not a record: create() goes ahead
    mine.parent.mkdir(parents=True)
    mine.write_text("keep")
    (work / "runs" / "other").mkdir()
    with pytest.raises(KeyboardInterrupt):
        with records.tentative(str(work), plan, job, cluster):
            raise KeyboardInterrupt
    assert sorted(os.listdir(work / "runs")) == ["other", plan.run_id]
    assert os.listdir(mine.parent) == ["notes.txt"] and mine.read_text() == "keep"


def test_a_submit_whose_checks_fail_leaves_no_record(tmp_path):
    # The record is written before the backend's checks (commands/submit.py); a failed check takes it back.
    job = write_job(tmp_path, name="needs-secret", secret_env=["KIT_TEST_UNSET_SECRET"])
    env = {k: v for k, v in os.environ.items() if k != "KIT_TEST_UNSET_SECRET"}
    result = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "r1", cwd=tmp_path, env=env)
    assert result.returncode == 2 and "KIT_TEST_UNSET_SECRET not set" in result.stderr, result.stderr
    assert sorted(os.listdir(tmp_path)) == ["needs-secret.yaml"]


def test_a_restarted_runs_duration_covers_every_attempt(tmp_path):
    # started_at is the latest attempt's; the run began with the first.
    _record(tmp_path, "again", state="succeeded", exit_code=0, created_at=1000.0, started_at=1100.0,
            finished_at=1130.0, restarts=1,
            attempts=[{"attempt": 1, "started_at": 1000.5, "finished_at": 1090.0, "state": "failed", "cause": "x"}])
    status = kit("status", "again", "--run-root", "runs", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "duration 2m09s" in status.stdout, status.stdout
    listing = kit("runs", "--run-root", "runs", cwd=tmp_path)
    assert listing.stdout.rstrip().endswith("2m09s"), listing.stdout


def test_logs_of_a_rank_that_wrote_nothing_say_so(tmp_path):
    d = _record(tmp_path, "quiet", state="succeeded", exit_code=0)
    (d / "plan.json").write_text(json.dumps({"world": {"world_size": 2, "procs_per_node": 2}}))
    (d / "node0.log").write_text("[node0/rank0] hello\n")
    r = kit("logs", "quiet", "--rank", "1", "--run-root", "runs", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    assert r.stderr == "kit: rank 1 has written nothing to its node's log (yet)\n", r.stderr
    assert kit("logs", "quiet", "--rank", "0", "--run-root", "runs", cwd=tmp_path).stdout == \
        "==> node0.log <==\n[node0/rank0] hello\n"

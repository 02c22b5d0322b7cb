"""A rank that hangs (never enters the collective the others wait in) ends the run after timeouts.hang with every
rank's stack recorded and the stuck ranks named with their innermost frames (issue 20); nothing is left."""

import os

import pytest

from tests.launcher.localrun import LOCAL_CLUSTER, kit, pids_of_run, write_job


@pytest.mark.slow
def test_a_hung_world_is_named_with_its_stacks(tmp_path):
    job = write_job(tmp_path, args=["--out", str(tmp_path), "--hang-rank", "1"], timeouts={"hang": 8})
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "hung", cwd=tmp_path, timeout=180)
    assert r.returncode == 124, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run hung failed: the run hung: no rank made progress for 8 s: rank 0 in "), line
    assert "rank 1 in <module> (rank_probe.py:" in line and "barrier" in line, line
    stacks = tmp_path / "runs" / "hung" / "stacks"
    assert sorted(os.listdir(stacks)) == ["rank0.txt", "rank1.txt"]
    assert "barrier" in (stacks / "rank0.txt").read_text()
    assert pids_of_run("hung") == []

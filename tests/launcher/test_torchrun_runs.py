"""Real local runs with torchrun as each node's launcher (job `launcher: torchrun`): the world forms, output is
tagged and logged, and a failed rank or Ctrl-C tears down ranks that take seconds to save, with the same one-line
failure as under `accelerate launch`."""

import json
import signal

import pytest

from tests.launcher.localrun import LOCAL_CLUSTER, kit, kit_background, pids_of_run, reports, wait_for, write_job

SAVE_SECONDS = 5


def _job(tmp_path, *probe_args):
    out = tmp_path / "out"
    out.mkdir()
    return write_job(tmp_path, nodes=2, launcher="torchrun", args=["--out", str(out), *probe_args]), out


@pytest.mark.slow
def test_two_torchrun_nodes_form_one_world_as_planned(tmp_path):
    job, out = _job(tmp_path, "--linger", "1")
    dry = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "tr-world", "--dry-run", "--format", "json",
              cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "tr-world", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = reports(out)
    assert [(g["rank"], g["machine_rank"], g["dist_world"], g["allreduce_sum"]) for g in got] == \
        [(0, 0, 2, 3.0), (1, 1, 2, 3.0)]
    assert "[node0/rank0] probe rank 0/2 ready" in r.stdout and "[node1/rank1] probe rank 1/2 ready" in r.stdout
    record = tmp_path / "runs" / "tr-world"
    plan = json.loads((record / "plan.json").read_text())
    assert plan == json.loads(dry.stdout)
    assert plan["nodes"][1]["argv"][1:3] == ["-m", "torch.distributed.run"]
    assert "probe rank 1/2 ready" in (record / "node1.log").read_text()


@pytest.mark.slow
def test_a_failed_rank_under_torchrun_gives_the_same_line_and_leaves_nothing(tmp_path):
    job, out = _job(tmp_path, "--linger", "600", "--on-term", f"save:{SAVE_SECONDS}", "--fail-rank", "1",
                    "--fail-code", "4", "--fail-message", "bad data: /x.csv:1: missing column 'text'")
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "tr-fail", cwd=tmp_path, timeout=120)
    assert r.returncode == 4, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "kit: run tr-fail failed: node 1 (localhost) rank 1 exited 4: "
        "bad data: /x.csv:1: missing column 'text'")
    assert (out / "ckpt0").read_text().count("piece") == SAVE_SECONDS * 10   # rank 0 saved before it stopped
    assert pids_of_run("tr-fail") == []
    assert "ChildFailedError" not in r.stdout + r.stderr


@pytest.mark.slow
def test_ctrl_c_under_torchrun_waits_for_the_save_then_leaves_nothing(tmp_path):
    job, out = _job(tmp_path, "--linger", "600", "--on-term", f"save:{SAVE_SECONDS}")
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "tr-int", cwd=tmp_path)
    try:
        assert wait_for(lambda: len(reports(out)) == 2), "ranks never reported"
        proc.send_signal(signal.SIGINT)
        console, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, console
    assert all((out / f"ckpt{r}").read_text().count("piece") == SAVE_SECONDS * 10 for r in (0, 1))
    assert pids_of_run("tr-int") == []
    assert console.strip().splitlines()[-1].startswith("kit: run tr-int cancelled")

"""Real local runs: two launchers on this machine form one world; failures and Ctrl-C leave nothing behind."""

import json
import os
import signal

import pytest

from tests.launcher.localrun import LOCAL_CLUSTER, kit, kit_background, pids_of_run, reports, wait_for, write_job

HOSTILE_ARGS = ["$(touch pwned)", "`touch pwned2`", "a; touch pwned3", "it's \"quoted\"", "two words",
                "line\nbreak", "*", "$HOME", "--flag=x y"]


@pytest.fixture(scope="module")
def two_node_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two_node")
    out = tmp / "out"
    out.mkdir()
    job = write_job(tmp, args=["--out", str(out), "--", *HOSTILE_ARGS])
    argv = ("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "two-node")
    dry = kit(*argv, "--dry-run", "--format", "json", cwd=tmp)
    assert dry.returncode == 0, dry.stderr
    (tmp / "dry-run.json").write_text(dry.stdout)
    result = kit(*argv, cwd=tmp)
    return tmp, out, result


@pytest.mark.slow
def test_real_run_executes_exactly_the_dry_run_plan(two_node_run):
    tmp, out, result = two_node_run
    recorded = json.loads((tmp / "runs" / "two-node" / "plan.json").read_text())
    assert recorded == json.loads((tmp / "dry-run.json").read_text())


def test_two_nodes_form_one_world(two_node_run):
    tmp, out, result = two_node_run
    assert result.returncode == 0, result.stderr + result.stdout
    got = reports(out)
    assert [r["rank"] for r in got] == [0, 1]
    assert all(r["world_size"] == 2 and r["dist_world"] == 2 for r in got)
    assert [r["machine_rank"] for r in got] == [0, 1]
    assert all(r["allreduce_sum"] == 3.0 for r in got)
    assert all("MULTI_CPU" in r["distributed_type"] for r in got)


def test_output_is_prefixed_and_logged(two_node_run):
    tmp, out, result = two_node_run
    assert "[node0/rank0] probe rank 0/2 ready" in result.stdout
    assert "[node1/rank1] probe rank 1/2 ready" in result.stdout
    assert all(line.startswith("[node") for line in result.stdout.splitlines())
    # One tag a line: worker lines keep torchrun's [nodeN/rankR], only the launcher's own lines get [nodeN].
    assert "] [node" not in result.stdout
    log1 = (tmp / "runs" / "two-node" / "node1.log").read_text()
    assert "probe rank 1/2 ready" in log1


def test_hostile_args_arrive_unchanged_and_run_nothing(two_node_run):
    tmp, out, result = two_node_run
    for r in reports(out):
        assert r["argv"] == HOSTILE_ARGS
    assert not any((tmp / name).exists() for name in ("pwned", "pwned2", "pwned3"))


def test_run_record(two_node_run):
    tmp, out, result = two_node_run
    run_dir = tmp / "runs" / "two-node"
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "succeeded" and status["exit_code"] == 0
    assert status["node_exit_codes"] == [0, 0]
    plan = json.loads((run_dir / "plan.json").read_text())
    # The files on disk are the plan's files, byte for byte.
    for rel, content in plan["files"].items():
        assert (tmp / rel).read_text() == content
    for name in ("job.yaml", "cluster.yaml", "accelerate.node0.yaml", "accelerate.node1.yaml"):
        assert (run_dir / name).is_file()
    listing = kit("runs", cwd=tmp)
    assert "two-node" in listing.stdout and "succeeded" in listing.stdout


def start_lingering_run(tmp_path, run_id):
    """A 2-node run whose ranks stay alive after reporting; returns (kit process, report dir)."""
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "300"])
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", run_id, cwd=tmp_path)
    return proc, out


@pytest.mark.slow
def test_killing_one_rank_ends_the_whole_run(tmp_path):
    proc, out = start_lingering_run(tmp_path, "kill-one")
    try:
        assert wait_for(lambda: len(reports(out)) == 2), "ranks never reported"
        victim = next(r for r in reports(out) if r["rank"] == 1)["pid"]
        os.kill(victim, signal.SIGKILL)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert pids_of_run("kill-one") == []
    status = json.loads((tmp_path / "runs" / "kill-one" / "status.json").read_text())
    assert status["state"] == "failed"


@pytest.mark.slow
def test_failing_rank_fails_the_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "300", "--fail-rank", "0"])
    result = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "fail-one", cwd=tmp_path)
    assert result.returncode != 0
    assert pids_of_run("fail-one") == []


@pytest.mark.slow
def test_ctrl_c_leaves_no_process(tmp_path):
    proc, out = start_lingering_run(tmp_path, "ctrl-c")
    try:
        assert wait_for(lambda: len(reports(out)) == 2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT
    assert pids_of_run("ctrl-c") == []
    status = json.loads((tmp_path / "runs" / "ctrl-c" / "status.json").read_text())
    assert status["state"] == "cancelled"


@pytest.mark.slow
def test_cancel_stops_only_its_own_run(tmp_path):
    outs = {}
    procs = {}
    for run_id in ("keep", "stop"):
        outs[run_id] = tmp_path / f"out-{run_id}"
        outs[run_id].mkdir()
        job = write_job(tmp_path, name=f"job-{run_id}", nodes=1,
                        args=["--out", str(outs[run_id]), "--linger", "300"])
        procs[run_id] = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", run_id,
                                       cwd=tmp_path)
    try:
        assert wait_for(lambda: all(len(reports(o)) == 1 for o in outs.values()))
        result = kit("cancel", "stop", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        procs["stop"].wait(timeout=60)
        assert pids_of_run("stop") == []
        assert procs["keep"].poll() is None and pids_of_run("keep")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=60)
    assert pids_of_run("keep") == []


@pytest.mark.slow
def test_deepspeed_plan_forms_a_deepspeed_world_on_cpu(tmp_path):
    """kit's generated DEEPSPEED YAML + JSON (ZeRO-3, CPU offload, bf16) engage DeepSpeed across 2 nodes."""
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)], strategy="deepspeed", mixed_precision="bf16",
                    deepspeed={"zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu"})
    result = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "ds", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    got = reports(out)
    assert [r["rank"] for r in got] == [0, 1]
    assert all("DEEPSPEED" in r["distributed_type"] and r["world_size"] == 2 for r in got)
    assert all(r["mixed_precision"] == "bf16" and r["allreduce_sum"] == 3.0 for r in got)


@pytest.mark.slow
def test_detached_run_is_followed_and_cancelled_by_id(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "300"])
    result = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "bg", "--detach", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "detached" in result.stderr
    assert wait_for(lambda: len(reports(out)) == 2)
    status = kit("status", "bg", cwd=tmp_path)
    assert "state running" in status.stdout
    assert "probe rank 1/2 ready" in kit("logs", "bg", "--node", "1", cwd=tmp_path).stdout
    assert kit("cancel", "bg", cwd=tmp_path).returncode == 0
    assert wait_for(lambda: pids_of_run("bg") == [], timeout=30)
    assert wait_for(lambda: json.loads((tmp_path / "runs" / "bg" / "status.json").read_text())["state"]
                    == "cancelled", timeout=30)

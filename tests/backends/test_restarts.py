"""restarts: N (issue 20): a 2-node training run whose rank is killed with SIGKILL after a checkpoint starts the
world again on a fresh port, the training module resumes from the checkpoint (the step count continues), and the
run succeeds; `kit status` lists the attempt. A job's own verdict is never restarted."""

import json
import os
import signal

import pytest

from tests.launcher.localrun import LOCAL_CLUSTER, kit, kit_background, pids_of_run, rank_pids, wait_for
from tests.train.support import resumable_args, synthetic_rows, tiny_args, write_csv
from tests.train.launch import link_reference_module


def _job(tmp_path, args, **fields):
    """The job, in `tmp_path`: the nodes' workdir (kit runs from it), which holds the reference module."""
    import yaml
    link_reference_module(tmp_path)
    job = {"name": "restarting", "entrypoint": {"module": "train"}, "args": args, "nodes": 2, "procs_per_node": 1,
           **fields}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return str(path)


@pytest.mark.slow
def test_a_killed_rank_restarts_the_world_which_resumes_from_its_checkpoint(tmp_path):
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    out = tmp_path / "out"
    args = resumable_args(data, out, tmp_path / "cache", "--max-steps", "60", "--save-every", "10",
                          "--no-save-model", "--log-every", "10")
    job = _job(tmp_path, args, restarts=1)
    here = tmp_path
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "restarted", cwd=here)
    try:
        ckpts = out / "checkpoints"
        assert wait_for(lambda: ckpts.is_dir() and any(n.startswith("step-") for n in os.listdir(ckpts)),
                        timeout=300), proc.stdout.read() if proc.poll() is not None else "no checkpoint"
        victims = rank_pids("restarted", 1)
        assert victims, "rank 1 not found"
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        output, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-4000:]
    assert "kit: run restarted attempt 2/2 after: node 1 (localhost) rank 1 killed by SIGKILL (exit code 137; out of memory?" in output, \
        output[-4000:]
    resumed = [ln for ln in output.splitlines() if "resumed from" in ln]
    assert resumed and " at step " in resumed[0] and " at step 0 " not in resumed[0], resumed
    assert "kit: run restarted succeeded (exit code 0)" in output
    status = json.loads((here / "runs" / "restarted" / "status.json").read_text())
    assert status["state"] == "succeeded" and len(status["attempts"]) == 1
    first = status["attempts"][0]
    assert first["state"] == "failed" and "killed by SIGKILL" in first["cause"]
    plan = json.loads((here / "runs" / "restarted" / "plan.json").read_text())
    assert first["master_port"] == plan["world"]["master_port"]
    assert pids_of_run("restarted") == []


@pytest.mark.slow
def test_resume_no_applies_to_the_first_attempt_the_restart_continues_its_own_checkpoint(tmp_path):
    """The README's rerun advice passes `-- --resume no`; the restarted attempt gets it again and must not throw the
    run's own checkpoints away (issue 41): an earlier run's checkpoint is removed, attempt 1's is continued."""
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    out = tmp_path / "out"
    args = tiny_args(data, out, tmp_path / "cache", "--max-steps", "60", "--save-every", "10", "--no-save-model",
                     "--log-every", "10")
    assert args[args.index("--resume") + 1] == "no"
    earlier = checkpoint_of_another_run(out)
    job = _job(tmp_path, args, restarts=1)
    proc = kit_background("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "rerun-no", cwd=tmp_path)
    try:
        ckpts = out / "checkpoints"
        assert wait_for(lambda: ckpts.is_dir() and any(n.startswith("step-") and n != earlier.name
                                                       for n in os.listdir(ckpts)),
                        timeout=300), proc.stdout.read() if proc.poll() is not None else "no checkpoint"
        for pid in rank_pids("rerun-no", 1):
            os.kill(pid, signal.SIGKILL)
        output, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-4000:]
    first, _, second = output.partition("kit: run rerun-no attempt 2/2 after:")
    assert second, output[-4000:]
    assert "starting from scratch: removing the checkpoints of an earlier run" in first, first[-3000:]
    assert "starting from scratch" not in second, second[-3000:]
    assert "--resume no applies to the run's first attempt: continuing its own checkpoint" in second, second[-3000:]
    resumed = [ln for ln in second.splitlines() if "resumed from" in ln]
    assert resumed and " at step 0 " not in resumed[0], resumed
    assert "kit: run rerun-no succeeded (exit code 0)" in output
    assert pids_of_run("rerun-no") == []


def checkpoint_of_another_run(out):
    """A complete checkpoint that an earlier run left in the output directory (`--resume no` must remove it)."""
    from tests.train.test_checkpoint import fake_checkpoint
    path = fake_checkpoint(out, 1000)
    manifest = json.loads((path / "kit_manifest.json").read_text())
    (path / "kit_manifest.json").write_text(json.dumps({**manifest, "run_id": "an-earlier-run"}))
    return path


@pytest.mark.slow
def test_a_jobs_own_verdict_is_never_restarted(tmp_path):
    job = _job(tmp_path, ["--data", str(tmp_path / "missing.csv"), "--output-dir", str(tmp_path / "o")], restarts=2)
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "refused", cwd=tmp_path, timeout=300)
    assert r.returncode == 4, r.stderr[-3000:]   # bad data: the job's own verdict
    assert "attempt 2" not in r.stderr


STEPPER = """
import os, sys, time
import pytest
import torch, torch.distributed as dist
dist.init_process_group("gloo")
for step in range(600):
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"step {step}", flush=True)
    time.sleep(0.2)
"""


@pytest.mark.slow
def test_a_restarted_world_that_never_forms_is_bounded_by_the_rendezvous_timeout(tmp_path):
    """Attempt 2's node 1 never starts its launcher (its setup line stalls): the world of attempt 2 did not form, and
    the dead world's log directories (attempt 1's) must not count as joined: the run ends at timeouts.rendezvous."""
    import time
    (tmp_path / "stepper.py").write_text(STEPPER)
    stall = tmp_path / "STALL"
    # Node 1's own command holds `--machine_rank 1`; the pattern is split so that the setup text does not match.
    setup = f"if [ -e {stall} ] && grep -qa -- '--machine_rank ''1' /proc/$$/cmdline; then sleep 600; fi"
    import yaml
    (tmp_path / "job.yaml").write_text(yaml.safe_dump({
        "name": "stalls", "entrypoint": {"script": "stepper.py"}, "nodes": 2, "procs_per_node": 1, "restarts": 1,
        "timeouts": {"rendezvous": 15}}))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "l", "backend": "local", "setup": [setup]}))
    proc = kit_background("submit", "job.yaml", "--cluster", "cluster.yaml", "--run-id", "stalled", cwd=tmp_path)
    try:
        assert wait_for(lambda: len(rank_pids("stalled", 1)) > 0 and (tmp_path / "runs" / "stalled" / "node1.log")
                        .read_text().count("step ") > 3, timeout=120), "attempt 1 never stepped"
        stall.write_text("")
        for pid in rank_pids("stalled", 1):
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        output, _ = proc.communicate(timeout=180)
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "attempt 2/2 after: node 1 (localhost) rank 1 killed by SIGKILL (exit code 137; out of memory?" in output, output[-3000:]
    assert proc.returncode != 0
    assert "node 1 (localhost) never joined" in output.splitlines()[-1], output[-3000:]
    assert took < 15 + 60, took   # the bound plus the teardown grace, not the stalled setup's 600 s
    assert pids_of_run("stalled") == []

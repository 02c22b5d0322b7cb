"""Attempts are plans (issue 30): attempt k's plan is built by the planner from the run's inputs and the attempt
(planning/attempt.py), so every launcher renders its fresh port, its master and its rendezvous id, and nothing is
patched after rendering; a SLURM restart (a requeue) runs attempt 1's plan."""

import dataclasses

import pytest
import yaml

from launcher.errors import KitError
from launcher.planning.attempt import Attempt, attempt_of
from launcher.planning.inputs import PlanInputs, plan_attempt
from tests.launcher.planning import LOCAL_CPU, PYTHON, RUN_ID, SLURM_GPU, SSH_GPU, cluster, job, plan

SSH_SPARE = {**SSH_GPU, "hosts": [*SSH_GPU["hosts"], {"name": "gpu-c", "address": "10.0.0.13", "gpus": 8},
                                  {"name": "gpu-d", "address": "10.0.0.14", "gpus": 8}]}
LAUNCHERS = {
    "accelerate": ({}, {"nodes": 2}),
    "torchrun": ({"launcher": "torchrun"}, {"nodes": 2}),
    "deepspeed": ({"strategy": "deepspeed"}, {"nodes": 2}),
    "one-process": ({}, {}),
}


def _port_words(node) -> list[str]:
    argv = list(node.argv)
    return [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("--main_process_port", "--master-port")]


@pytest.mark.parametrize("name", list(LAUNCHERS))
def test_attempt_two_renders_a_fresh_port_and_its_rendezvous_id(name):
    fields, overrides = LAUNCHERS[name]
    first = plan(job(restarts=1, **fields), cluster(LOCAL_CPU), **overrides)
    second = plan(job(restarts=1, **fields), cluster(LOCAL_CPU), attempt=Attempt(2), **overrides)
    assert second.attempt == 2 and second.world.master_port == first.world.master_port + 1
    for a, b in zip(first.nodes, second.nodes):
        assert attempt_of(a) == 1 and attempt_of(b) == 2
        assert b.env["PET_RDZV_ID"] == "kit-attempt-2" and "export PET_RDZV_ID=kit-attempt-2" in b.command
        assert all(int(w) == second.world.master_port for w in _port_words(b))
        assert len(_port_words(b)) == (0 if name == "one-process" else 1)
    for path, content in second.files.items():
        if "accelerate.node" in path:
            assert yaml.safe_load(content)["main_process_port"] == second.world.master_port
    # Nothing else differs: the same run, the same world.
    same = dataclasses.replace(second, attempt=1, world=first.world, nodes=first.nodes, files=first.files)
    assert same == first


def test_a_lost_host_moves_to_a_spare_and_the_master_with_it():
    first = plan(job(restarts=2), cluster(SSH_SPARE), nodes=2)
    assert first.spare_hosts == (("gpu-c", "10.0.0.13"), ("gpu-d", "10.0.0.14"))
    second = plan(job(restarts=2), cluster(SSH_SPARE), nodes=2, attempt=Attempt(2, ("gpu-a",)))
    assert [n.host for n in second.nodes] == ["gpu-c", "gpu-b"]
    assert second.world.master_addr == "10.0.0.13" and second.spare_hosts == (("gpu-d", "10.0.0.14"),)
    for node in second.nodes:
        argv = list(node.argv)
        assert argv[argv.index("--main_process_ip") + 1] == "10.0.0.13"
        assert yaml.safe_load(second.files[f"runs/{RUN_ID}/accelerate.node{node.machine_rank}.yaml"])[
            "main_process_ip"] == "10.0.0.13"
    # The replacement lost too: the next spare.
    third = plan(job(restarts=2), cluster(SSH_SPARE), nodes=2, attempt=Attempt(3, ("gpu-a", "gpu-c")))
    assert [n.host for n in third.nodes] == ["gpu-d", "gpu-b"] and third.world.master_port == first.world.master_port + 2
    with pytest.raises(KitError, match="host gpu-b was lost and the cluster has no spare host left"):
        plan(job(restarts=2), cluster(SSH_SPARE), nodes=2, attempt=Attempt(3, ("gpu-a", "gpu-b", "gpu-c")))


def test_a_slurm_restart_is_a_requeue_of_the_same_script():
    first = plan(job(restarts=1), cluster(SLURM_GPU), nodes=2)
    second = plan(job(restarts=1), cluster(SLURM_GPU), nodes=2, attempt=Attempt(2))
    assert second.attempt == 2 and dataclasses.replace(second, attempt=1) == first


@pytest.mark.parametrize("base,fields,overrides", [
    (LOCAL_CPU, {"strategy": "deepspeed", "deepspeed": {"zero_stage": 3}}, {"nodes": 2}),
    (SSH_SPARE, {"env": {"API_TOKEN": "s3cret"}, "secret_env": ["HF_TOKEN"]}, {"nodes": 2}),
    (SLURM_GPU, {"strategy": "fsdp", "mixed_precision": "bf16"}, {"nodes": 2}),
    (LOCAL_CPU, {"launcher": "torchrun", "timeouts": {"rendezvous": 30}}, {"procs_per_node": 2}),
])
def test_the_inputs_kept_for_restarts_plan_attempt_one_again_exactly(base, fields, overrides):
    from launcher.spec import Overrides, apply_overrides
    j, c = apply_overrides(job(**fields), cluster(base), Overrides(**overrides))
    first = plan(j, c)
    inputs = PlanInputs.of(j, c, RUN_ID, PYTHON)
    assert plan_attempt(inputs, first, Attempt()) == first
    assert plan_attempt(inputs, first, Attempt(2)) == plan(j, c, attempt=Attempt(2))

"""The pure half of sweeps: spec -> trials -> per-trial plans (no processes, no files)."""

import math

import pytest

from launcher.errors import KitError
from launcher.spec import Overrides, load_job
from launcher.spec.cluster import ClusterSpec
from launcher.spec.load import validate
from launcher.sweeps.plan import earlier_sweep_id, plan_sweep, sweep_id_for
from launcher.spec.sweep import SweepSpec
from launcher.sweeps.trials import _with_arg, expand, trial_job

JOB = "jobs/bert_cls.yaml"
CLUSTER = ClusterSpec(name="local", backend="local", gpus_per_node=0, cpus=2)


def spec(**fields) -> SweepSpec:
    data = {"method": "grid", "metric": "test.accuracy", "goal": "max",
            "parameters": {"--lr": ["1e-4", "3e-4"], "--batch-size": [16, 32]}, **fields}
    return validate(SweepSpec, data, "sweep")


def test_grid_is_every_combination_in_spec_order():
    trials = expand(spec())
    assert [t.params for t in trials] == [
        {"--lr": "1e-4", "--batch-size": 16}, {"--lr": "1e-4", "--batch-size": 32},
        {"--lr": "3e-4", "--batch-size": 16}, {"--lr": "3e-4", "--batch-size": 32}]
    assert [t.index for t in trials] == [0, 1, 2, 3]


def test_random_is_seeded_and_stays_in_range():
    s = spec(method="random", trials=50, seed=7, parameters={
        "--lr": {"low": "1e-5", "high": 1e-2, "scale": "log"}, "--warmup": {"low": 0, "high": 10},
        "--dropout": {"low": 0.1, "high": 0.3}, "mixed_precision": ["no", "bf16"]})
    a, b = expand(s), expand(s)
    assert [t.params for t in a] == [t.params for t in b]
    assert [t.params for t in a] != [t.params for t in expand(s.model_copy(update={"seed": 8}))]
    lrs = [t.params["--lr"] for t in a]
    assert all(1e-5 <= v <= 1e-2 for v in lrs)
    # Log scale: about as many draws per decade, so well below the linear midpoint.
    assert sum(v < 1e-3 for v in lrs) > 25
    assert all(isinstance(t.params["--warmup"], int) and 0 <= t.params["--warmup"] <= 10 for t in a)
    assert all(0.1 <= t.params["--dropout"] <= 0.3 for t in a)
    assert {t.params["mixed_precision"] for t in a} == {"no", "bf16"}


def test_with_arg_replaces_instead_of_repeating():
    assert _with_arg(["--lr", "1", "--x"], "--lr", 2) == ["--x", "--lr", "2"]
    assert _with_arg(["--lr=1", "--epochs", "3"], "--lr", 2) == ["--epochs", "3", "--lr", "2"]
    assert _with_arg(["--no-bucketing", "--lr", "1"], "--no-bucketing", False) == ["--lr", "1"]
    assert _with_arg([], "--no-bucketing", True) == ["--no-bucketing"]


def test_trial_job_applies_fields_args_and_output_dir():
    job = load_job(JOB)
    s = spec(parameters={"--lr": ["3e-4"], "deepspeed.zero_stage": [3], "mixed_precision": ["bf16"]})
    tjob = trial_job(job, s, expand(s)[0], "outputs/S-t0")
    assert tjob.deepspeed.zero_stage == 3 and tjob.mixed_precision == "bf16"
    assert tjob.args[-4:] == ["--lr", "3e-4", "--output-dir", "outputs/S-t0"]
    assert tjob.sweep is None
    assert job.deepspeed.zero_stage == 2 and job.mixed_precision == "no"  # input untouched


def test_bad_job_field_value_names_the_trial():
    job = load_job(JOB)
    s = spec(parameters={"mixed_precision": ["fp8"]})
    with pytest.raises(KitError, match=r"sweep trial 0 \(mixed_precision=fp8\).*mixed_precision"):
        plan_sweep(job, s, CLUSTER, Overrides(), default_python="python")


def test_plans_are_ordinary_runs_with_their_own_ids_dirs_and_ports():
    job = load_job(JOB)
    plan = plan_sweep(job, spec(parallel=2), CLUSTER.model_copy(update={"master_port": 29500}), Overrides())
    assert [t.run_id for t in plan.trials] == [f"{plan.sweep_id}-t{i}" for i in range(4)]
    for t in plan.trials:
        assert t.plan.run_id == t.run_id
        assert t.plan.nodes[0].env["KIT_RUN_ID"] == t.run_id
        assert f"--output-dir {t.output_dir}" in t.plan.nodes[0].command
    # Two trials run at once on this host: a fixed port is spread over them.
    assert {t.plan.world.master_port for t in plan.trials} == {29500, 29501}
    assert "--lr 3e-4" in plan.trials[3].plan.nodes[0].command


def test_sweep_id_is_deterministic_and_tracks_the_sweep():
    job = load_job(JOB)
    a = sweep_id_for(job, spec(), CLUSTER, Overrides())
    assert a == sweep_id_for(job, spec(), CLUSTER, Overrides())
    assert a != sweep_id_for(job, spec(seed=1), CLUSTER, Overrides())
    assert a != sweep_id_for(job, spec(), CLUSTER, Overrides(nodes=2))
    assert a.startswith("bert_cls-sweep-")


def test_the_metric_and_goal_are_not_part_of_the_sweep_id():
    # A corrected metric (or goal) is the same sweep: its trials that ran are kept, and scored with it.
    job = load_job(JOB)
    a = sweep_id_for(job, spec(), CLUSTER, Overrides())
    assert a == sweep_id_for(job, spec(metric="evals.-1.accuracy", goal="min", max_failures=None), CLUSTER,
                             Overrides())
    assert plan_sweep(job, spec(metric="loss"), CLUSTER, Overrides()).sweep_id == a
    # The id an earlier kit gave it held the metric: kept to name an earlier record of the same sweep.
    earlier = earlier_sweep_id(job, spec(), CLUSTER, Overrides())
    assert earlier != a and earlier != earlier_sweep_id(job, spec(metric="loss"), CLUSTER, Overrides())
    assert plan_sweep(job, spec(), CLUSTER, Overrides()).earlier_id == earlier
    assert plan_sweep(job, spec(), CLUSTER, Overrides(), sweep_id="mine").earlier_id is None


def test_a_sweep_with_a_study_is_another_sweep_for_another_metric_or_goal():
    # A study keeps its direction and what it was told (trials pruned under the old metric): another metric or goal
    # must not continue it.
    job = load_job(JOB)
    early = {"method": "asha", "min_steps": 1, "reduction_factor": 3}
    a = sweep_id_for(job, spec(early_stopping=early), CLUSTER, Overrides())
    assert a != sweep_id_for(job, spec(early_stopping=early, goal="min"), CLUSTER, Overrides())
    assert a != sweep_id_for(job, spec(early_stopping=early, metric="loss"), CLUSTER, Overrides())
    assert a == sweep_id_for(job, spec(early_stopping=early, max_failures=None), CLUSTER, Overrides())


def test_random_value_is_readable():
    s = spec(method="random", trials=5, parameters={"--lr": {"low": 1e-5, "high": 1e-3, "scale": "log"}})
    for t in expand(s):
        assert len(repr(t.params["--lr"])) <= 10 and math.isfinite(t.params["--lr"])

"""Sweep specs through the real CLI: bad ones exit 2 with one line and start and write nothing; the dry-run shows
where trials run at once (GPU slices on a local cluster, host sets on SSH)."""

import json
import os

import pytest
import yaml

from tests.sweeps.sweeprun import REPO, kit
from tests.train.launch import link_reference_module

JOB = os.path.join(REPO, "jobs", "bert_cls.yaml")
GOOD = {"method": "grid", "metric": "test.accuracy", "goal": "max", "parameters": {"--lr": ["1e-4", "3e-4"]}}


def _sweep(**changes) -> dict:
    data = {**GOOD, **changes}
    return {k: v for k, v in data.items() if v is not None}


CASES = [
    ("unknown-key", _sweep(trails=4), [], "unknown key 'trails'"),
    ("empty-list", _sweep(parameters={"--lr": []}), [], "parameters"),
    ("empty-range", _sweep(method="random", trials=3, parameters={"--lr": {"low": 0.1, "high": 0.1}}), [],
     "empty range"),
    ("log-range-from-zero", _sweep(method="random", trials=3,
                                   parameters={"--lr": {"low": 0, "high": 0.1, "scale": "log"}}), [], "low > 0"),
    ("grid-with-range", _sweep(parameters={"--lr": {"low": 0.1, "high": 0.2}}), [], "a grid needs a list"),
    ("random-without-trials", _sweep(method="random"), [], "needs trials"),
    ("unknown-job-field", _sweep(parameters={"foo.bar": [1, 2]}), [], "'foo' is not a job field"),
    ("unknown-deepspeed-field", _sweep(parameters={"deepspeed.nonexistent": [1, 2]}), [],
     "deepspeed has no field 'nonexistent'"),
    ("bad-metric-path", _sweep(metric="test..accuracy"), [], "metric"),
    ("swept-output-arg", _sweep(parameters={"--output-dir": ["a", "b"]}), [], "own output directory"),
    ("set-conflicts-with-swept-field", _sweep(parameters={"deepspeed.zero_stage": [2, 3]}),
     ["--set", "deepspeed.zero_stage=3"], "which the sweep varies"),
    ("bad-trial-value", _sweep(parameters={"mixed_precision": ["no", "fp8"]}), [], "sweep trial 1"),
]


@pytest.mark.parametrize("sweep,extra,expected", [pytest.param(s, e, x, id=i) for i, s, e, x in CASES])
def test_bad_sweep_spec_is_one_line_and_starts_nothing(tmp_path, sweep, extra, expected):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    r = kit("submit", JOB, "--sweep", str(path), *extra, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kit: error: ") and expected in lines[0], r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not (tmp_path / "runs").exists() and not (tmp_path / "outputs").exists()


def test_a_job_with_a_sweep_section_and_sweep_file_is_refused(tmp_path):
    job = yaml.safe_load(open(JOB))
    job["sweep"] = GOOD
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(GOOD))
    r = kit("submit", "job.yaml", "--sweep", "sweep.yaml", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "has a sweep section already" in r.stderr
    assert not (tmp_path / "runs").exists()


def _dry_run_json(tmp_path, cluster: dict, sweep: dict, *extra) -> dict:
    link_reference_module(tmp_path)   # a local cluster's workdir (.) holds the job's module: its check passes
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    r = kit("submit", JOB, "--sweep", "sweep.yaml", "--cluster", "cluster.yaml", *extra, "--dry-run",
            "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_local_gpu_trials_never_share_a_gpu(tmp_path):
    # 6 GPUs, trials of 2: at most 3 at once even though parallel asks for 4, each with its own ids.
    cluster = {"name": "box", "backend": "local", "gpus_per_node": 6, "gpu_ids": ["2", "3", "4", "5", "6", "7"]}
    sweep = {**GOOD, "parallel": 4, "parameters": {"--lr": ["1e-4", "2e-4", "3e-4", "4e-4", "5e-4"]}}
    plan = _dry_run_json(tmp_path, cluster, sweep, "--gpus", "2")
    assert plan["lanes"] == 3
    gpus = {}
    for trial in plan["trials"]:
        argv = plan["trial_plans"][trial["run_id"]]["nodes"][0]["argv"]
        gpus[trial["index"]] = argv[argv.index("--gpu_ids") + 1]
        assert trial["placement"] == f"gpus {gpus[trial['index']]}"
    assert gpus == {0: "2,3", 1: "4,5", 2: "6,7", 3: "2,3", 4: "4,5"}
    # Trials that may run at once never draw the same rendezvous port.
    ports = [plan["trial_plans"][t["run_id"]]["world"]["master_port"] for t in plan["trials"]]
    assert len(set(ports[:3])) == 3 and ports[3:] == ports[:2]
    # A trial needing every GPU runs alone.
    plan = _dry_run_json(tmp_path, cluster, sweep, "--gpus", "6")
    assert plan["lanes"] == 1
    text = kit("submit", JOB, "--sweep", "sweep.yaml", "--cluster", "cluster.yaml", "--gpus", "2", "--dry-run",
               cwd=tmp_path).stdout
    assert "3 at a time (parallel 4: no two trials share a GPU)" in text and "gpus 6,7" in text


def test_ssh_trials_spread_over_disjoint_host_sets(tmp_path):
    hosts = [{"name": f"h{i}", "address": f"10.0.0.{i}"} for i in range(4)]
    cluster = {"name": "lab", "backend": "ssh", "hosts": hosts}
    sweep = {**GOOD, "parallel": 2, "parameters": {"--lr": ["1e-4", "2e-4", "3e-4"]}}
    plan = _dry_run_json(tmp_path, cluster, sweep, "--nodes", "2")
    hosts_of = {t["index"]: [n["host"] for n in plan["trial_plans"][t["run_id"]]["nodes"]] for t in plan["trials"]}
    assert hosts_of == {0: ["h0", "h1"], 1: ["h2", "h3"], 2: ["h0", "h1"]}
    # More trials at once than host sets: CPU trials share hosts.
    plan = _dry_run_json(tmp_path, cluster, {**sweep, "parallel": 3}, "--nodes", "4")
    assert plan["lanes"] == 3
    assert {tuple(n["host"] for n in p["nodes"]) for p in plan["trial_plans"].values()} == {("h0", "h1", "h2", "h3")}

"""Sweeps that learn, on the local backend through the real CLI: `method: tpe` (Optuna's TPE, seeded) and
`early_stopping` (a pruned trial stopped as a run and recorded `pruned`), with a pure-Python trial whose learning
curve is a known function of its value: loss(step) = (lr - 0.3)^2 + 1/step (scripts/curve_probe.py). The study is a
journal file in the sweep record; a SIGKILL of kit mid-sweep and the same command again finish the planned trials,
none run twice."""

import json
import os
import signal
import subprocess
import sys

import pytest
import yaml

from tests.launcher.localrun import wait_for
from tests.sweeps.sweeprun import REPO, kit, status_json, sweep_ids, trial_leftovers

CURVE = os.path.join(REPO, "tests", "sweeps", "scripts", "curve_probe.py")


def curve_job(tmp_path, sweep: dict, steps=12, sleep=0.05, name="curve") -> str:
    job = {"name": name, "entrypoint": {"script": CURVE}, "args": ["--steps", str(steps), "--sleep", str(sleep)],
           "nodes": 1, "procs_per_node": 1,
           "sweep": {"metric": "loss", "goal": "min", **sweep}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return str(path)


def _study_trials(run_root, sweep_id):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    storage = JournalStorage(JournalFileBackend(os.path.join(run_root, sweep_id, "study.journal")))
    return optuna.load_study(study_name=sweep_id, storage=storage).get_trials(deepcopy=False)


def _trial_record(run_root, run_id) -> dict:
    return json.load(open(os.path.join(run_root, run_id, "status.json")))


def test_a_tpe_sweep_is_reproducible_with_its_seed(tmp_path):
    sweep = {"method": "tpe", "trials": 6, "seed": 7, "parameters": {"--lr": {"low": 0.0, "high": 1.0}}}
    job = curve_job(tmp_path, sweep, steps=3, sleep=0.01)
    chosen = []
    for run_id in ("tpe-a", "tpe-b"):
        r = kit("submit", job, "--run-id", run_id, cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        view = status_json(tmp_path, run_id)
        assert [t["state"] for t in view["trials"]] == ["succeeded"] * 6
        chosen.append([t["params"]["--lr"] for t in view["trials"]])
        # What ran is what the table says: each trial's own run record holds its chosen value in its argv.
        for t in view["trials"]:
            record = _trial_record(tmp_path / "runs", t["run_id"])
            assert record["state"] == "succeeded"
        loss = json.load(open(tmp_path / "outputs" / f"{run_id}-t5" / "metrics.json"))["loss"]
        assert loss == pytest.approx((view["trials"][5]["params"]["--lr"] - 0.3) ** 2 + 1 / 3, abs=1e-9)
        done = [t for t in _study_trials(tmp_path / "runs", run_id) if t.state.name == "COMPLETE"]
        assert len(done) == 6
    assert chosen[0] == chosen[1], chosen
    assert len(set(chosen[0])) == 6      # TPE chose values of its own after the seeded startup draw
    # The dry-run shows the startup trials' values and says the others are chosen as the sweep goes.
    dry = kit("submit", job, "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "chosen by TPE as the sweep goes" in dry.stdout and "(chosen then)" in dry.stdout
    assert f"{chosen[0][0]}" in dry.stdout


def test_asha_prunes_bad_trials_stops_them_and_records_them_pruned(tmp_path):
    # A grid in a fixed order: the good value first, so the bad ones meet its values at every rung.
    sweep = {"method": "grid", "parameters": {"--lr": [0.3, 0.35, 1.3, 1.5, 2.0]},
             "early_stopping": {"method": "asha", "min_steps": 2, "reduction_factor": 3}}
    job = curve_job(tmp_path, sweep, steps=40, sleep=0.1)
    r = kit("submit", job, "--run-id", "asha", cwd=tmp_path, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    view = status_json(tmp_path, "asha")
    states = {t["params"]["--lr"]: t["state"] for t in view["trials"]}
    assert states[0.3] == "succeeded"
    pruned = [t for t in view["trials"] if t["state"] == "pruned"]
    assert {t["params"]["--lr"] for t in pruned} >= {1.3, 1.5, 2.0}, states
    assert view["counts"].get("pruned") == len(pruned) and view["state"] == "succeeded"
    assert view["best"] == "asha-t0"
    import kit as kit_api
    assert kit_api.get_sweep("asha", run_root=str(tmp_path / "runs")).view()["counts"] == view["counts"]  # the API
    for t in pruned:
        record = _trial_record(tmp_path / "runs", t["run_id"])
        assert record["state"] == "pruned"
        # It was stopped early: its own curve ends well before the trial's 40 steps.
        lines = open(tmp_path / "outputs" / t["run_id"] / "metrics.jsonl").read().splitlines()
        assert 2 <= len(lines) < 40 and t["pruned_at"] < 40
        assert not os.path.exists(tmp_path / "outputs" / t["run_id"] / "metrics.json")
    assert trial_leftovers("asha", 5) == {}
    assert (tmp_path / "runs" / "asha" / "sweep.png").stat().st_size > 1000   # with the curves, pruned marked
    assert "pruned: stopped early by sweep.early_stopping" in kit("sweep", "status", "asha", cwd=tmp_path).stdout
    told = {t.user_attrs["kit_trial"]: t.state.name for t in _study_trials(tmp_path / "runs", "asha")}
    assert told == {t["index"]: ("PRUNED" if t["state"] == "pruned" else "COMPLETE") for t in view["trials"]}
    # Running it again runs nothing: a pruned trial ran as far as the sweep wanted.
    again = kit("submit", job, "--run-id", "asha", cwd=tmp_path)
    assert again.returncode == 0 and "nothing to run" in again.stderr, again.stderr


def test_a_rung_compares_values_at_its_own_step_however_many_lines_one_read_brings(tmp_path):
    # Trial 1 (lr 0.5) writes its first 9 steps in one write: the driver reads them together. At rung 0 (step 1)
    # it is worse than trial 0 (1.04 against 1.0) and is pruned there; judged by its step-9 value (0.151) it
    # would pass rungs 0 (step 1) and 1 (step 3) and be pruned only at step 9.
    sweep = {"method": "grid", "parameters": {"--lr": [0.3, 0.5]},
             "early_stopping": {"method": "asha", "min_steps": 1, "reduction_factor": 3}}
    job = curve_job(tmp_path, sweep, steps=30, sleep=0.1)
    data = yaml.safe_load(open(job))
    data["args"] += ["--burst", "9", "--burst-lr", "0.5"]
    open(job, "w").write(yaml.safe_dump(data, sort_keys=False))
    r = kit("submit", job, "--run-id", "burst", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    view = status_json(tmp_path, "burst")
    assert [t["state"] for t in view["trials"]] == ["succeeded", "pruned"], view["trials"]
    assert view["trials"][1]["pruned_at"] == 1
    told = {t.user_attrs["kit_trial"]: t for t in _study_trials(tmp_path / "runs", "burst")}
    assert sorted(told[1].intermediate_values) == [1]      # the lines after the step it was pruned at: unreported


def test_sigkill_of_kit_mid_sweep_then_the_same_command_finishes_exactly_the_planned_trials(tmp_path):
    sweep = {"method": "tpe", "trials": 6, "seed": 1, "parameters": {"--lr": {"low": 0.0, "high": 1.0}},
             "early_stopping": {"method": "median", "min_steps": 3}}
    job = curve_job(tmp_path, sweep, steps=30, sleep=0.1)
    # Processes are found machine-wide by run id: an id of this test process's own (another checkout's run of this
    # test beside it must not count).
    sweep_id = f"durable{os.getpid()}"
    argv = [sys.executable, "-m", "launcher", "submit", job, "--run-id", sweep_id]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Kill kit while trial 3 (chosen by TPE: past the startup draw of 2) runs.
        wait_for(lambda: os.path.isfile(tmp_path / "outputs" / f"{sweep_id}-t3" / "metrics.jsonl"), timeout=240)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    killed = json.load(open(tmp_path / "runs" / sweep_id / "sweep.json"))["trials"][3]
    assert killed.get("asked") is not None and killed["params"] is not None
    # The killed trial's supervisor stops its run when kit is gone (its pipe from kit reads EOF).
    wait_for(lambda: trial_leftovers(sweep_id, 6) == {}, timeout=120)
    wait_for(lambda: _trial_record(tmp_path / "runs", f"{sweep_id}-t3")["state"] not in ("starting", "running"),
             timeout=60)
    r = kit("submit", job, "--run-id", sweep_id, cwd=tmp_path, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    view = status_json(tmp_path, sweep_id)
    assert [t["index"] for t in view["trials"]] == list(range(6))
    assert all(t["state"] in ("succeeded", "pruned") for t in view["trials"]), view["trials"]
    assert view["trials"][3]["params"] == killed["params"]      # the killed trial ran again with its values
    trials = _study_trials(tmp_path / "runs", sweep_id)
    finished = [t for t in trials if t.state.name in ("COMPLETE", "PRUNED")]
    assert sorted(t.user_attrs["kit_trial"] for t in finished) == list(range(6))   # each once, none twice
    assert not [t for t in trials if t.state.name in ("RUNNING", "WAITING")]
    assert sweep_ids(tmp_path / "runs") == [sweep_id]
    assert trial_leftovers(sweep_id, 6) == {}


BAD = [
    ("unknown-method", {"method": "sha"}, "sweep.early_stopping.method"),
    ("min-steps-zero", {"method": "asha", "min_steps": 0}, "sweep.early_stopping.min_steps"),
    ("reduction-factor-one", {"method": "hyperband", "reduction_factor": 1}, "sweep.early_stopping.reduction_factor"),
    ("unknown-key", {"method": "median", "patience": 3}, "sweep.early_stopping.patience"),
    ("no-method", {"min_steps": 3}, "sweep.early_stopping.method"),
]


@pytest.mark.parametrize("early,expected", [pytest.param(e, x, id=i) for i, e, x in BAD])
def test_bad_early_stopping_fields_are_one_line(tmp_path, early, expected):
    job = curve_job(tmp_path, {"method": "random", "trials": 2, "parameters": {"--lr": [0.1, 0.2]},
                               "early_stopping": early})
    r = kit("submit", job, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kit: error: ") and expected in lines[0], r.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "outputs").exists()


def test_tpe_without_trials_is_one_line(tmp_path):
    job = curve_job(tmp_path, {"method": "tpe", "parameters": {"--lr": {"low": 0.0, "high": 1.0}}})
    r = kit("submit", job, "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and "method tpe needs trials" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def test_help_and_the_dry_run_of_a_tpe_sweep_do_not_import_optuna(tmp_path):
    job = curve_job(tmp_path, {"method": "tpe", "trials": 4, "parameters": {"--lr": {"low": 0.0, "high": 1.0}},
                               "early_stopping": {"method": "asha"}})
    for argv in (["--help"], ["submit", job, "--dry-run"]):
        r = subprocess.run([sys.executable, "-X", "importtime", "-m", "launcher", *argv], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "optuna" not in r.stderr, [line for line in r.stderr.splitlines() if "optuna" in line][:3]


def test_report_metric_appends_one_line_per_call_on_rank_0_only(tmp_path, monkeypatch):
    from kit.metrics import report_metric
    monkeypatch.delenv("RANK", raising=False)
    report_metric(str(tmp_path / "out"), 1, loss=0.5)
    report_metric(str(tmp_path / "out"), 2, loss=0.25, accuracy=1)
    monkeypatch.setenv("RANK", "1")
    report_metric(str(tmp_path / "out"), 3, loss=0.1)
    lines = [json.loads(x) for x in open(tmp_path / "out" / "metrics.jsonl")]
    assert lines == [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25, "accuracy": 1.0}]
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ValueError, match="loss"):
        report_metric(str(tmp_path / "out"), 4, loss=float("nan"))
    import kit as kit_api
    assert kit_api.report_metric is report_metric

"""Sweeps on the local backend, for real: a grid of the training module two trials at a time, the table, JSON and
plot; a crashing parameter value fails its trial only; a re-run skips what succeeded; Ctrl-C and `kit cancel`
of a running sweep leave no process of any trial."""

import json
import os
import signal
import subprocess
import sys

import pytest
import yaml

from tests.launcher.localrun import wait_for
from tests.sweeps.sweeprun import (LOCAL_CLUSTER, REPO, kit, probe_job, status_json, sweep_ids, sweep_json,
                                  trial_leftovers)
from tests.train.launch import link_reference_module
from tests.train.support import synthetic_rows, write_csv

SMALL = ["--model", "tiny", "--vocab-size", "200", "--max-length", "32", "--eval-batch-size", "16",
         "--resume", "no", "--log-every", "5", "--max-steps", "4", "--no-save-model", "--pretrain-epochs", "0"]


def _train_job(tmp_path, parameters: dict) -> str:
    """The reference job (jobs/bert_cls.yaml), one process per trial, on a small synthetic dataset; `tmp_path`, the
    trials' workdir (kit runs from it), holds the reference module."""
    link_reference_module(tmp_path)
    job = yaml.safe_load(open(os.path.join(REPO, "jobs", "bert_cls.yaml")))
    data = write_csv(tmp_path / "d.csv", synthetic_rows(160))
    job.update(procs_per_node=1, args=["--data", str(data), "--cache-dir", str(tmp_path / "cache"), *SMALL],
               sweep={"method": "grid", "metric": "evals.-1.accuracy", "goal": "max", "parallel": 2,
                      "parameters": parameters})
    path = tmp_path / "sweep_job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return str(path)


def _submit(tmp_path, job, *extra, timeout=400):
    return kit("submit", job, "--cluster", LOCAL_CLUSTER, *extra, cwd=tmp_path, timeout=timeout)


def _at_most_two_at_once(run_root, run_ids) -> int:
    spans = []
    for run_id in run_ids:
        st = json.load(open(os.path.join(run_root, run_id, "status.json")))
        spans.append((st["started_at"], st["finished_at"]))
    return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)


@pytest.mark.slow
def test_grid_of_the_training_module_two_at_a_time_then_a_rerun_skips_it(tmp_path):
    job = _train_job(tmp_path, {"--lr": [1.0e-3, 3.0e-3], "--batch-size": [8, 16]})
    r = _submit(tmp_path, job)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run_root = tmp_path / "runs"
    (sweep_id,) = sweep_ids(run_root)
    trials = [f"{sweep_id}-t{i}" for i in range(4)]
    assert r.stderr.count("started as run") == 4 and r.stderr.count(" succeeded after ") == 4, r.stderr
    assert _at_most_two_at_once(run_root, trials) == 2
    # Each trial ran exactly the plan its dry-run shows.
    dry = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--dry-run", "--format", "json", cwd=tmp_path)
    for run_id, plan in json.loads(dry.stdout)["trial_plans"].items():
        assert json.load(open(run_root / run_id / "plan.json")) == plan

    view = status_json(tmp_path, sweep_id)
    assert [t["state"] for t in view["trials"]] == ["succeeded"] * 4
    scores = {t["run_id"]: t["metric"] for t in view["trials"]}
    assert all(isinstance(v, float) and 0 <= v <= 1 for v in scores.values())
    assert view["best"] == max(scores, key=scores.get) and view["state"] == "succeeded"
    # Each metric is the trial's own last validation accuracy.
    for t in view["trials"]:
        metrics = json.load(open(tmp_path / "outputs" / t["run_id"] / "metrics.json"))
        assert metrics["evals"][-1]["accuracy"] == t["metric"]
        assert metrics["args"]["lr"] == t["params"]["--lr"] and metrics["args"]["batch_size"] == t["params"][
            "--batch-size"]
    text = kit("sweep", "status", cwd=tmp_path).stdout
    best_row = next(line for line in text.splitlines() if line.startswith(f"{trials.index(view['best'])} *"))
    assert "succeeded" in best_row and f"{scores[view['best']]:.4f}" in best_row
    assert "* best: trial" in text
    assert kit("status", sweep_id, cwd=tmp_path).stdout == text
    png = run_root / sweep_id / "sweep.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    drawn = png.stat().st_mtime_ns
    looked_again = kit("sweep", "status", cwd=tmp_path)
    assert "(unchanged)" in looked_again.stderr and png.stat().st_mtime_ns == drawn   # not redrawn per look
    listed = kit("runs", cwd=tmp_path).stdout
    assert all(t in listed for t in trials) and f"{sweep_id}" in listed and "sweep" in listed
    assert "state succeeded" in kit("status", trials[0], cwd=tmp_path).stdout

    again = _submit(tmp_path, job)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("succeeded before") == 4 and "started as run" not in again.stderr


@pytest.mark.slow
def test_a_crashing_value_fails_its_trial_only_and_a_rerun_retries_it(tmp_path):
    job = _train_job(tmp_path, {"--batch-size": [8, -1]})
    r = _submit(tmp_path, job)
    assert r.returncode == 1, r.stderr[-3000:]
    (sweep_id,) = sweep_ids(tmp_path / "runs")
    view = status_json(tmp_path)
    assert [t["state"] for t in view["trials"]] == ["succeeded", "failed"]
    assert view["trials"][1]["exit_code"] == 2 and view["trials"][1]["metric"] is None
    assert view["best"] == f"{sweep_id}-t0" and view["state"] == "failed"
    assert "trial 1 (--batch-size=-1) failed" in r.stderr and "bad configuration" in r.stderr
    # A sweep's logs are its trials': one line that names them.
    logs = kit("logs", sweep_id, cwd=tmp_path)
    assert logs.returncode == 2 and logs.stderr.count("\n") == 1 and f"kit logs <trial> ({sweep_id}-t0" in logs.stderr

    again = _submit(tmp_path, job)
    assert again.returncode == 1
    assert "trial 0 succeeded before" in again.stderr and again.stderr.count("started as run") == 1
    assert os.path.isdir(tmp_path / "runs" / f"{sweep_id}-t1.attempt1")
    assert sweep_json(tmp_path / "runs", sweep_id)["state"] == "failed"


@pytest.mark.slow
def test_a_sweep_of_a_script_that_always_fails_stops_after_max_failures(tmp_path):
    # Every trial fails the same way (a mistake in the script, not in a swept value): the sweep stops launching
    # after sweep.max_failures (default 3) in a row, instead of running all six.
    (tmp_path / "always_fails.py").write_text(
        "import sys\nprint('always_fails: no column label in reviews.csv', file=sys.stderr)\nsys.exit(4)\n")
    job = tmp_path / "fails.yaml"
    job.write_text(yaml.safe_dump({"name": "fails", "entrypoint": {"script": "always_fails.py"}, "sweep": {
        "method": "grid", "metric": "score", "goal": "max", "parameters": {"--x": [1, 2, 3, 4, 5, 6]}}}))
    r = _submit(tmp_path, str(job))
    assert r.returncode == 1, r.stderr[-3000:]
    (sweep_id,) = sweep_ids(tmp_path / "runs")
    assert r.stderr.count("started as run") == 3, r.stderr
    stop = next(line for line in r.stderr.splitlines() if "stopped launching" in line)
    assert stop.startswith(f"kit: sweep {sweep_id}: stopped launching trials: 3 in a row failed the same way (run "
                           f"{sweep_id}-t2 failed: node 0 (localhost) exited 4: "), stop
    assert stop.endswith("always_fails: no column label in reviews.csv); 3 trial(s) not started (sweep.max_failures: "
                         "3); fix the cause and run the same command again to run them"), stop
    view = status_json(tmp_path, sweep_id)
    assert [t["state"] for t in view["trials"]] == ["failed"] * 3 + ["not run"] * 3
    assert view["stopped"] == stop.removeprefix("kit: ")
    assert stop.removeprefix("kit: ") in kit("sweep", "status", cwd=tmp_path).stdout


def _wait_ready(tmp_path, sweep_id, n):
    def ready():
        logs = [tmp_path / "runs" / f"{sweep_id}-t{i}" / "node0.log" for i in range(n)]
        return all(p.exists() and "ready" in p.read_text() for p in logs)
    assert wait_for(ready, timeout=120), "the trials never started"


@pytest.mark.slow
def test_kit_cancel_of_a_detached_sweep_leaves_no_trial_process(tmp_path):
    job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 2, 3]}}, args=["--linger", "300"])
    r = _submit(tmp_path, job, "--detach")
    assert r.returncode == 0, r.stderr
    (sweep_id,) = sweep_ids(tmp_path / "runs")
    _wait_ready(tmp_path, sweep_id, 2)
    assert trial_leftovers(sweep_id, 3).keys() == {f"{sweep_id}-t0", f"{sweep_id}-t1"}
    cancel = kit("cancel", sweep_id, cwd=tmp_path, timeout=200)
    assert cancel.returncode == 0, cancel.stderr
    assert "no process of any trial is left" in cancel.stdout
    assert trial_leftovers(sweep_id, 3) == {}
    view = status_json(tmp_path, sweep_id)
    assert [t["state"] for t in view["trials"]] == ["cancelled", "cancelled", "not run"]
    assert view["state"] == "cancelled"
    assert "nothing to cancel" in kit("cancel", sweep_id, cwd=tmp_path).stdout


def test_ctrl_c_of_a_sweep_stops_every_trial(tmp_path):
    job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 2, 3]}}, args=["--linger", "300"])
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", job, "--cluster", LOCAL_CLUSTER],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: sweep_ids(tmp_path / "runs"), timeout=60)
    (sweep_id,) = sweep_ids(tmp_path / "runs")
    _wait_ready(tmp_path, sweep_id, 2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert trial_leftovers(sweep_id, 3) == {}
    assert "stopping sweep" in err and err.count(" cancelled after ") == 2
    assert "state cancelled" in out.splitlines()[0]


def test_a_sweep_id_in_another_run_root_is_not_taken_running_or_over(tmp_path, monkeypatch):
    import psutil
    from launcher import run_index
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "home"))
    a, b = tmp_path / "a", tmp_path / "b"
    running = a / "runs" / "sw"
    running.mkdir(parents=True)
    me = psutil.Process()   # its driver: a live process
    (running / "sweep.json").write_text(json.dumps({"state": "running", "driver_pid": me.pid,
                                                    "driver_start": me.create_time(), "trials": []}))
    run_index.remember(str(running))
    b.mkdir()
    job = probe_job(b, {"parameters": {"--x": [1]}})
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "sw", cwd=b)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"sweep id sw is taken by a sweep still running at {running}" in r.stderr, r.stderr
    assert not (b / "runs").exists()
    # Over, it still names that sweep (and its trials' runs): as a run id does.
    (running / "sweep.json").write_text(json.dumps({"state": "succeeded", "trials": []}))
    r = kit("submit", job, "--cluster", LOCAL_CLUSTER, "--run-id", "sw", cwd=b)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"sweep id sw is taken by a sweep that ended (succeeded) at {running}; pick another --run-id, e.g. " \
        "sw-2" in r.stderr, r.stderr
    assert not (b / "runs").exists()


def _metric(job: str, metric: str) -> None:
    data = yaml.safe_load(open(job))
    data["sweep"]["metric"] = metric
    open(job, "w").write(yaml.safe_dump(data, sort_keys=False))


def test_a_metric_the_trials_do_not_write_stops_the_sweep_and_a_corrected_one_reuses_the_trials(tmp_path):
    # metric: loss while the probe writes final.loss. Two lanes: trial 0 ends at once, trial 1 waits for `go`;
    # trial 0's metrics.json stops the sweep: trials 2 and 3 never start, trial 1 (in flight) is let finish.
    go = tmp_path / "go"
    job = probe_job(tmp_path, {"metric": "loss", "parallel": 2,
                               "parameters": {"--x": [1, 2], "--wait-for": ["none", str(go)]}})
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", job, "--cluster", LOCAL_CLUSTER],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: sweep_ids(tmp_path / "runs"), timeout=60)
        (sweep_id,) = sweep_ids(tmp_path / "runs")
        assert wait_for(lambda: sweep_json(tmp_path / "runs", sweep_id).get("stopped"), timeout=120), \
            "the sweep never stopped on its metric"
        # Stopped while trial 1 still runs: it is let finish, and nothing else starts.
        assert trial_leftovers(sweep_id, 4).keys() == {f"{sweep_id}-t1"}
        go.write_text("")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err[-3000:]
    assert trial_leftovers(sweep_id, 4) == {}
    assert err.count("started as run") == 2 and "trial 1 (--x=1, --wait-for=" in err, err
    where = f"trial 0's metrics.json (outputs/{sweep_id}-t0/metrics.json)"
    line = (f"kit: sweep {sweep_id}: sweep.metric loss names no number in {where}, which has score, "
            f"evals.-1.accuracy, final.loss (did you mean final.loss?); stopped launching trials (2 not started; "
            f"the 1 running finish); fix sweep.metric and run the same command again: the trials that succeeded "
            f"are kept")
    assert err.splitlines()[-1] == line, err
    assert err.count(line) == 2 and out == ""   # said when it stopped, and last; no table of unscored trials
    view = status_json(tmp_path, sweep_id)
    assert [t["state"] for t in view["trials"]] == ["succeeded", "succeeded", "not run", "not run"]
    assert view["stopped"] == line.removeprefix("kit: ")

    # Run again with a metric still wrong: checked against the trials that ran, before anything starts.
    _metric(job, "scor")
    r = _submit(tmp_path, job)
    assert r.returncode == 2 and "started as run" not in r.stderr, r.stderr
    assert r.stderr.splitlines()[-1] == (
        f"kit: error: sweep {sweep_id}: sweep.metric scor names no number in {where}, which has score, "
        f"evals.-1.accuracy, final.loss (did you mean score?); nothing was started (fix sweep.metric: the trials "
        f"that succeeded are kept)"), r.stderr

    # Corrected: the same sweep (its id does not hold the metric); trials 0 and 1 are kept, 2 and 3 run, and the
    # table and the best trial are the new metric's, from every trial's metrics.json.
    _metric(job, "score")
    r = _submit(tmp_path, job)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sweep_ids(tmp_path / "runs") == [sweep_id]
    assert r.stderr.count("succeeded before") == 2 and r.stderr.count("started as run") == 2, r.stderr
    assert f"trial 2 (--x=2, --wait-for=none) started as run {sweep_id}-t2" in r.stderr
    view = status_json(tmp_path, sweep_id)
    assert view["metric"] == "score" and view["state"] == "succeeded" and view["stopped"] is None
    assert [t["metric"] for t in view["trials"]] == [-1.0, -1.0, 0.0, 0.0]
    assert view["best"] == f"{sweep_id}-t2"
    # And the goal too: min of final.loss, the trials scored again from their records, nothing run.
    data = yaml.safe_load(open(job))
    data["sweep"].update(metric="final.loss", goal="min")
    open(job, "w").write(yaml.safe_dump(data, sort_keys=False))
    r = _submit(tmp_path, job)
    assert r.returncode == 0 and "every trial succeeded already" in r.stderr, r.stderr
    view = status_json(tmp_path, sweep_id)
    assert [t["metric"] for t in view["trials"]] == [1.0, 1.0, 0.0, 0.0] and view["best"] == f"{sweep_id}-t2"


def test_a_sweep_an_earlier_kit_recorded_under_the_id_with_its_metric_is_named_and_continued(tmp_path):
    from launcher.core.prepare import load
    from launcher.core.request import Request
    from launcher.sweeps.plan import earlier_sweep_id
    job = probe_job(tmp_path, {"parameters": {"--x": [1, 2]}})
    loaded = load(Request(job=job, cluster=LOCAL_CLUSTER))
    earlier = earlier_sweep_id(loaded.job, loaded.sweep, loaded.cluster, loaded.overrides)
    # The record an earlier kit wrote: the same sweep, under the id that held its metric.
    r = _submit(tmp_path, job, "--run-id", earlier)
    assert r.returncode == 0, r.stderr[-3000:]
    now = json.loads(kit("submit", job, "--cluster", LOCAL_CLUSTER, "--dry-run", "--format", "json",
                         cwd=tmp_path).stdout)["sweep_id"]
    assert now != earlier
    # The same command is not started over under its new id: one line names both ways, nothing starts.
    r = _submit(tmp_path, job)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr == (f"kit: error: this sweep was recorded by an earlier kit as {earlier} (its id held "
                        f"sweep.metric then); continue it with --run-id {earlier}, or start it over with --run-id "
                        f"{now}\n")
    assert sweep_ids(tmp_path / "runs") == [earlier]
    # Named, it continues (its metric can be corrected too): nothing runs again.
    _metric(job, "final.loss")
    r = _submit(tmp_path, job, "--run-id", earlier)
    assert r.returncode == 0 and r.stderr.count("succeeded before") == 2 and "started as run" not in r.stderr
    assert [t["metric"] for t in status_json(tmp_path, earlier)["trials"]] == [1.0, 0.0]


def test_one_trial_without_a_metrics_file_does_not_stop_the_sweep_two_do(tmp_path):
    # A file not found may be one not there yet (a shared filesystem's lag): the next trial that succeeds decides.
    job = probe_job(tmp_path, {"metric": "score", "parameters": {"--x": [1, 2, 3], "--no-metrics": [1, 0]}})
    r = _submit(tmp_path, job)   # grid: x=1 without, x=1 with, x=2 without, ...: the second trial writes one
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("started as run") == 6
    job = probe_job(tmp_path, {"metric": "score", "parameters": {"--x": [4, 5, 6], "--no-metrics": [1]}})
    r = _submit(tmp_path, job)
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.count("started as run") == 2 and "is missing or not JSON" in r.stderr.splitlines()[-1]

"""kit's Python API, driven from a fresh interpreter as a user's program would, on a local cluster (the SSH and
SLURM harness clusters: tests/backends/test_api_remote.py): submit returns at once and the run goes on without
the caller; wait, state, exit code, the one-line failure, logs, cancel; bad input raises KitError with nothing
written; a sweep's trials and best."""

import json
import os

import pytest

from tests.launcher.apirun import run_api
from tests.launcher.localrun import LOCAL_CLUSTER, pids_of_run, reports, write_job
from tests.sweeps.sweeprun import probe_job


@pytest.mark.slow
def test_submit_wait_fail_cancel_and_bad_input_from_a_fresh_interpreter(tmp_path):
    out, slow_out = tmp_path / "out", tmp_path / "slow-out"
    out.mkdir()
    slow_out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    seen = run_api(f"""
        started = time.monotonic()
        run = kit.submit({job!r}, cluster={LOCAL_CLUSTER!r}, nodes=2, args=["--linger", "3"], run_id="api-ok")
        seen["returned_s"] = time.monotonic() - started
        seen["state_at_once"] = run.state
        seen["final"] = run.wait(timeout=180)
        seen["exit_code"], seen["failure"], seen["id"] = run.exit_code, run.failure, run.id
        seen["logs"] = run.logs()
        seen["node1_log"] = run.logs(node=1)
        seen["again"] = kit.get_run("api-ok").state

        bad_run = kit.submit({job!r}, cluster={LOCAL_CLUSTER!r}, nodes=2, run_id="api-fail",
                             args=["--fail-rank", "1", "--fail-code", "4", "--fail-message", "no such column"])
        seen["fail_final"] = bad_run.wait(timeout=180)
        seen["fail_code"], seen["fail_cause"] = bad_run.exit_code, bad_run.failure

        slow = kit.submit({job!r}, cluster={LOCAL_CLUSTER!r}, nodes=2, run_id="api-cancel",
                          args=["--out", {str(slow_out)!r}, "--linger", "300"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(os.listdir({str(slow_out)!r})) < 2:
            time.sleep(0.2)
        seen["cancel_before"] = slow.state
        seen["cancel_said"] = slow.cancel()
        seen["cancel_after"] = slow.state

        seen["missing_job"] = bad(lambda: kit.submit("no-such-job.yaml", run_id="api-missing"))
        seen["bad_nodes"] = bad(lambda: kit.submit({job!r}, cluster={LOCAL_CLUSTER!r}, nodes=0, run_id="api-zero"))
        seen["bad_set"] = bad(lambda: kit.plan({job!r}, set={{"strategy": "zero"}}))
        seen["plan_str"] = str(kit.plan({job!r}, cluster={LOCAL_CLUSTER!r}, nodes=2, run_id="api-plan"))
        seen["listed"] = [r.id for r in kit.runs()]
        seen["no_run"] = bad(lambda: kit.get_run("api-never"))
    """, cwd=tmp_path)
    # submit returned before the run ended (its ranks linger 3 s), which then succeeded on its own.
    assert seen["returned_s"] < 3 + 10 and seen["state_at_once"] in ("starting", "running"), seen
    assert (seen["final"], seen["exit_code"], seen["failure"], seen["id"]) == ("succeeded", 0, None, "api-ok")
    assert "==> node0.log <==" in seen["logs"] and "probe rank 1/2 ready" in seen["node1_log"]
    assert seen["again"] == "succeeded" and {"api-ok", "api-fail", "api-cancel"} <= set(seen["listed"])
    assert sorted(r["allreduce_sum"] for r in reports(out)) == [3.0, 3.0]
    # A failing rank: `failed`, the rank's own code, the same one-line cause `kit status` prints.
    assert (seen["fail_final"], seen["fail_code"]) == ("failed", 4), seen
    assert seen["fail_cause"].startswith("node 1 (localhost) rank 1 exited 4") and "no such column" in \
        seen["fail_cause"], seen["fail_cause"]
    # cancel returns once no process of the run is left.
    assert seen["cancel_before"] == "running" and "no process of it is left" in seen["cancel_said"]
    assert seen["cancel_after"] == "cancelled" and pids_of_run("api-cancel") == []
    # Bad input: KitError with the CLI's one line, nothing written.
    assert seen["missing_job"].startswith("job no-such-job.yaml: no such file"), seen["missing_job"]
    assert "nodes" in seen["bad_nodes"] and "strategy" in seen["bad_set"], seen
    assert not any(os.path.exists(tmp_path / "runs" / r) for r in ("api-missing", "api-zero", "api-plan"))
    assert seen["plan_str"].startswith("kit plan: run api-plan")
    # The API's words, not the CLI's flags.
    assert seen["no_run"].startswith("run api-never: no record") and \
        seen["no_run"].endswith("see kit.runs(), or pass run_root='DIR'"), seen["no_run"]
    status = json.loads((tmp_path / "runs" / "api-ok" / "status.json").read_text())
    assert status["state"] == "succeeded" and status["supervisor_pid"]


@pytest.mark.slow
def test_a_sweep_from_the_api_gives_its_trials_and_best(tmp_path):
    job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 2, 3]}}, args=["--linger", "1"])
    seen = run_api(f"""
        started = time.monotonic()
        sw = kit.sweep({job!r}, cluster={LOCAL_CLUSTER!r}, sweep_id="api-sweep")
        seen["returned_s"] = time.monotonic() - started
        seen["final"] = sw.wait(timeout=300)
        seen["trials"] = [(t["index"], t["state"], t["metric"]) for t in sw.trials]
        seen["best"] = sw.best["run_id"]
        seen["trial_state"] = sw.run(1).state
        seen["again_best"] = kit.get_sweep("api-sweep").best["params"]
    """, cwd=tmp_path)
    assert seen["final"] == "succeeded", seen
    assert seen["trials"] == [[0, "succeeded", -1.0], [1, "succeeded", 0.0], [2, "succeeded", -1.0]]
    assert seen["best"] == "api-sweep-t1" and seen["trial_state"] == "succeeded"
    assert seen["again_best"] == {"--x": 2}


@pytest.mark.slow
def test_a_run_outlives_the_program_that_submitted_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "4"])
    first = run_api(f"""
        run = kit.submit({job!r}, cluster={LOCAL_CLUSTER!r}, nodes=2, run_id="api-outlives")
        seen["state"] = run.state
    """, cwd=tmp_path)   # this interpreter exits here, the run still going
    assert first["state"] in ("starting", "running")
    later = run_api("""
        seen["final"] = kit.get_run("api-outlives").wait(timeout=180)
        seen["failure"] = bad(lambda: kit.submit("x.yaml", set=["not", "a", "mapping"]))
    """, cwd=tmp_path)
    assert later["final"] == "succeeded", later
    assert later["failure"].startswith("set: a mapping"), later
    assert len(reports(out)) == 2


def test_a_sweeps_error_names_its_sweep_id_keyword(tmp_path):
    """kit.sweep's id is `sweep_id=`: an error about it says so, not the run's `run_id=` the core names."""
    job = probe_job(tmp_path, {"parameters": {"--x": [1]}})
    seen = run_api(f"""
        try:
            kit.sweep({job!r}, cluster={LOCAL_CLUSTER!r}, sweep_id="abc-t3")
        except kit.KitError as e:
            seen["error"] = str(e)
    """, cwd=tmp_path)
    assert "sweep_id=abc-t3" in seen["error"] and "run_id" not in seen["error"], seen

"""kit's Python API from a fresh interpreter against the harness's SSH hosts and SLURM cluster: submit -> wait ->
succeeded; a failing job -> failed with the one-line cause; cancel -> no process left; a bad spec -> KitError with
nothing written; a sweep -> trials and best. And a sweep submitted through `slurm.login_host` (the array goes
through the same SLURM backend path as a single job)."""

import os
import sys

import yaml

from tests.backends.slurmrun import probe_processes
from tests.backends.sshrun import cluster as ssh_cluster
from tests.backends.sshrun import leftovers
from tests.backends.test_slurm_login import _cluster as login_cluster
from tests.backends.test_slurm_login import kit as login_kit
from tests.harness.configs import slurm_cluster_config
from tests.launcher.apirun import run_api
from tests.launcher.localrun import write_job
from tests.sweeps.sweeprun import probe_job, status_json

BODY = """
    run = kit.submit({job!r}, cluster={cluster!r}, nodes=2, gpus=0, args=["--linger", "1"], run_id={ok!r})
    seen["final"] = run.wait(timeout=240)
    seen["exit_code"], seen["failure"] = run.exit_code, run.failure
    seen["logs"] = run.logs(node=1)

    bad_run = kit.submit({job!r}, cluster={cluster!r}, nodes=2, gpus=0, run_id={fail!r},
                         args=["--fail-rank", "1", "--fail-code", "4", "--fail-message", "no such column"])
    seen["fail_final"] = bad_run.wait(timeout=240)
    seen["fail_code"], seen["fail_cause"] = bad_run.exit_code, bad_run.failure

    slow = kit.submit({job!r}, cluster={cluster!r}, nodes=2, gpus=0, run_id={slow!r},
                      args=["--out", {slow_out!r}, "--linger", "300"])
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(os.listdir({slow_out!r})) < 2:
        time.sleep(0.3)
    seen["cancel_before"] = slow.state
    seen["cancel_said"] = slow.cancel()
    seen["cancel_after"] = slow.state

    seen["bad_nodes"] = bad(lambda: kit.submit({job!r}, cluster={cluster!r}, nodes={too_many}, gpus=0,
                                               run_id="api-too-many"))
    sw = kit.sweep({sweep_job!r}, cluster={cluster!r}, sweep_id={sweep_id!r})
    seen["sweep_final"] = sw.wait(timeout=300)
    seen["trials"] = [(t["state"], t["metric"]) for t in sw.trials]
    seen["best"] = sw.best["params"]
"""


def _jobs(tmp_path):
    out, slow_out = tmp_path / "out", tmp_path / "slow-out"
    out.mkdir()
    slow_out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out)])
    sweep_job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 2]}}, name="apisweep")
    return job, str(slow_out), sweep_job


def _check(seen, cause_prefix):
    assert (seen["final"], seen["exit_code"], seen["failure"]) == ("succeeded", 0, None), seen
    assert "probe rank 1/2 ready" in seen["logs"]
    assert (seen["fail_final"], seen["fail_code"]) == ("failed", 4), seen
    assert seen["fail_cause"].startswith(cause_prefix) and "no such column" in seen["fail_cause"], seen
    assert seen["cancel_before"] == "running" and seen["cancel_after"] == "cancelled", seen
    assert "nodes" in seen["bad_nodes"], seen
    assert seen["sweep_final"] == "succeeded" and seen["trials"] == [["succeeded", -1.0], ["succeeded", 0.0]]
    assert seen["best"] == {"--x": 2}


def test_the_api_on_the_ssh_hosts(ssh_hosts, tmp_path):
    here = ssh_hosts.bed.path("work")
    job, slow_out, sweep_job = _jobs(tmp_path)
    config = ssh_cluster(ssh_hosts, tmp_path)
    seen = run_api(BODY.format(job=job, cluster=config, ok="api-ssh-ok", fail="api-ssh-fail", slow="api-ssh-cancel",
                               slow_out=slow_out, too_many=3, sweep_job=sweep_job, sweep_id="api-ssh-sweep"),
                   cwd=here)
    _check(seen, "node 1 (n2) rank 1 exited 4")
    assert "no process of it is left on any host" in seen["cancel_said"], seen
    assert leftovers(ssh_hosts, "api-ssh-cancel") == {}
    assert not os.path.exists(os.path.join(here, "runs", "api-too-many"))


def test_the_api_on_the_slurm_cluster(slurm_cluster, tmp_path):
    here = slurm_cluster.bed.path("work")
    job, slow_out, sweep_job = _jobs(tmp_path)
    config = slurm_cluster_config(slurm_cluster, tmp_path / "slurm.yaml", python=sys.executable)
    seen = run_api(BODY.format(job=job, cluster=config, ok="api-slurm-ok", fail="api-slurm-fail",
                               slow="api-slurm-cancel", slow_out=slow_out, too_many=3, sweep_job=sweep_job,
                               sweep_id="api-slurm-sweep"), cwd=here)
    _check(seen, "node 1 (n2) rank 1 exited 4")
    assert "cancelled (SLURM job" in seen["cancel_said"], seen
    assert probe_processes(slurm_cluster, "api-slurm-cancel") == {}
    assert not os.path.exists(os.path.join(here, "runs", "api-too-many"))


def test_a_sweep_through_the_login_host(slurm_cluster, ssh_hosts, tmp_path):
    """kit runs here with a SLURM_CONF that points nowhere: the array, its state and the trials' metrics all
    came through the login host; the records stay here."""
    here = tmp_path / "submitter"
    here.mkdir()
    job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 2, 3]}}, name="loginsweep")
    config = login_cluster(slurm_cluster, ssh_hosts, tmp_path)
    r = login_kit("submit", job, "--cluster", config, "--gpus", "0", "--run-id", "login-sweep", cwd=str(here),
                  timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "via login host n1" in r.stderr, r.stderr
    view = status_json(str(here), "login-sweep")
    assert [(t["state"], t["metric"]) for t in view["trials"]] == \
        [("succeeded", -1.0), ("succeeded", 0.0), ("succeeded", -1.0)], view
    assert view["best"] == "login-sweep-t1" and view["state"] == "succeeded"
    data = yaml.safe_load(open(here / "runs" / "login-sweep" / "sweep.json"))
    assert data["login_host"] == "n1" and data["array_job_id"]
    remote = os.path.join(slurm_cluster.bed.path("work"), "runs")
    assert os.path.isfile(os.path.join(remote, "login-sweep", "sweep.sbatch"))
    assert not os.path.exists(os.path.join(remote, "login-sweep-t0", "status.json"))

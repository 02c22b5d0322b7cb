"""A sweep on the SSH test cluster (tests/harness): two one-node trials at once on disjoint hosts, their metrics
fetched from each trial's host into its record; `kit cancel` of a running sweep leaves nothing on any host."""

import json
import os
import secrets

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.localrun import wait_for
from tests.sweeps.sweeprun import kit, probe_job, status_json


def _ready(ssh_hosts, sweep_id, n) -> bool:
    logs = [os.path.join(workdir(ssh_hosts), "runs", f"{sweep_id}-t{i}", "node0.log") for i in range(n)]
    return all(os.path.exists(p) and "ready" in open(p).read() for p in logs)


def test_two_trials_at_once_on_disjoint_hosts_and_cancel_leaves_nothing(ssh_hosts, tmp_path):
    here, config = workdir(ssh_hosts), cluster(ssh_hosts, tmp_path)
    sweep_id = f"ssh-sweep-{secrets.token_hex(3)}"
    job = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 3]}}, args=["--linger", "2"])
    r = kit("submit", job, "--cluster", config, "--run-id", sweep_id, cwd=here, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "on hosts n1" in r.stderr and "on hosts n2" in r.stderr
    view = status_json(here, sweep_id)
    assert [t["state"] for t in view["trials"]] == ["succeeded", "succeeded"]
    assert [t["metric"] for t in view["trials"]] == [-1.0, -1.0]
    for i, host in enumerate(("n1", "n2")):
        run = os.path.join(here, "runs", f"{sweep_id}-t{i}")
        # The copy fetched over SFTP from the trial's node 0 host, which is its lane's host.
        assert json.load(open(os.path.join(run, "metrics.json")))["host"] == host
        status = json.load(open(os.path.join(run, "status.json")))
        assert status["backend"] == "ssh" and status["nodes"][0]["host"] == host
    starts = [json.load(open(os.path.join(here, "runs", f"{sweep_id}-t{i}", "status.json")))["started_at"]
              for i in range(2)]
    ends = [json.load(open(os.path.join(here, "runs", f"{sweep_id}-t{i}", "status.json")))["finished_at"]
            for i in range(2)]
    assert max(starts) < min(ends), "the two trials did not run at once"

    slow_id = f"{sweep_id}-slow"
    slow = probe_job(tmp_path, {"parallel": 2, "parameters": {"--x": [1, 2, 3]}}, args=["--linger", "300"],
                     name="slow")
    r = kit("submit", slow, "--cluster", config, "--run-id", slow_id, "--detach", cwd=here)
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: _ready(ssh_hosts, slow_id, 2), timeout=120), "the trials never started"
    cancel = kit("cancel", slow_id, cwd=here, timeout=200)
    assert cancel.returncode == 0 and "no process of any trial is left" in cancel.stdout, cancel.stdout
    for i in range(3):
        assert leftovers(ssh_hosts, f"{slow_id}-t{i}") == {}
    assert [t["state"] for t in status_json(here, slow_id)["trials"]] == ["cancelled", "cancelled", "not run"]

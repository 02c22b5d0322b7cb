"""`kit wait` of a detached SSH run: it blocks while the run starts and goes on on two hosts, and exits with the
failing rank's own code; `kit status --json` names both hosts and the failure."""

import json
import time

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.localrun import kit, kit_background, wait_for, write_job


def test_wait_of_a_detached_ssh_run_exits_with_the_ranks_code(ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--fail-rank", "1", "--fail-code", "7"])
    here = workdir(ssh_hosts)
    r = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-waited-run", "--detach",
            cwd=here, timeout=120)
    assert r.returncode == 0, r.stderr
    started = time.monotonic()
    waiter = kit_background("wait", "ssh-waited", cwd=here)   # the beginning of its id will do
    said, _ = waiter.communicate(timeout=180)
    assert waiter.returncode == 7, said
    assert said.strip().splitlines()[-1].startswith("kit: run ssh-waited-run failed: node 1 (n2) rank 1 exited 7"), said
    assert time.monotonic() - started > 1   # it waited for the run, which needs seconds to start on the hosts
    data = json.loads(kit("status", "ssh-waited-run", "--json", cwd=here, timeout=60).stdout)
    assert (data["backend"], data["state"], data["exit_code"], data["hosts"]) == ("ssh", "failed", 7, ["n1", "n2"])
    assert data["failure"]["rank"] == 1 and data["failure"]["host"] == "n2"
    assert wait_for(lambda: not leftovers(ssh_hosts, "ssh-waited-run"), timeout=30)

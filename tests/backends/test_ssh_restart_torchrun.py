"""A torchrun world restarted after a SIGKILL (issue 30): attempt 2 is the planner's plan of attempt 2, so its
master port is a fresh one (torchrun has no accelerate flags a patch could find), on two SSH hosts."""

import json
import os

import yaml

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.localrun import REPO, kit

PROBE = os.path.join(REPO, "tests", "launcher", "scripts", "restart_probe.py")


def test_a_killed_torchrun_rank_restarts_the_world_on_a_fresh_port(ssh_hosts, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "tr-restart", "launcher": "torchrun", "entrypoint": {"script": PROBE},
                                   "args": ["--out", str(out), "--once", str(tmp_path / "killed")], "nodes": 2,
                                   "procs_per_node": 1, "restarts": 1}))
    r = kit("submit", str(job), "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "tr-restart",
            cwd=workdir(ssh_hosts), timeout=240)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "kit: run tr-restart attempt 2/2 after: node 1 (n2) rank 1 killed by SIGKILL" in r.stderr, r.stderr
    run_dir = os.path.join(workdir(ssh_hosts), "runs", "tr-restart")
    first = json.load(open(os.path.join(run_dir, "plan.json")))
    second = json.load(open(os.path.join(run_dir, "plan.attempt2.json")))
    port1, port2 = first["world"]["master_port"], second["world"]["master_port"]
    assert port2 == port1 + 1 and second["attempt"] == 2
    # Each attempt's ranks joined the world of that attempt's plan: attempt 1's on its port, attempt 2's on the new.
    seen = sorted((s["rank"], s["master_port"], s["rdzv_id"]) for s in
                  (json.load(open(out / name)) for name in os.listdir(out)))
    assert seen == [(0, port1, ""), (0, port2, "kit-attempt-2"), (1, port1, ""), (1, port2, "kit-attempt-2")], seen
    assert f"--master-port {port2}" in " ".join(second["nodes"][1]["argv"])
    status = json.load(open(os.path.join(run_dir, "status.json")))
    assert [a["master_port"] for a in status["attempts"]] == [port1] and status["state"] == "succeeded"
    assert leftovers(ssh_hosts, "tr-restart") == {}

"""A node that cannot reach the master (a blackhole route from n2 to n1's address), on the SSH hosts (issue 20):
the run ends within timeouts.rendezvous with one line naming the node and the cause checked from it, the
console shows no C++ stack-trace flood (it stays in the node log), and nothing of the run is left."""

import os
import time

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.localrun import kit, write_job


def test_a_node_that_cannot_reach_the_master_is_named(ssh_hosts, tmp_path):
    n1, n2 = ssh_hosts.hosts[:2]
    job = write_job(tmp_path, args=["--out", str(tmp_path)], timeouts={"rendezvous": 40})
    n2.run(["ip", "route", "add", "blackhole", f"{n1.address}/32"])
    try:
        started = time.monotonic()
        r = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-blackhole",
                cwd=workdir(ssh_hosts), timeout=240)
        took = time.monotonic() - started
    finally:
        n2.run(["ip", "route", "del", "blackhole", f"{n1.address}/32"], check=False)
    assert r.returncode == 124, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"kit: run ssh-blackhole failed: node 1 (n2) never joined: it cannot reach the master "
                           f"{n1.address}:") and "(a blackhole route to it)" in line, line
    assert "check routes and firewalls between the nodes, or run kit doctor" in line
    assert took < 40 + 45, took
    assert "frame #" not in r.stdout and "TCPStore" not in r.stdout, r.stdout[-3000:]
    assert len([ln for ln in r.stdout.splitlines() if ln.startswith("[node1")]) <= 8, r.stdout[-3000:]
    assert leftovers(ssh_hosts, "ssh-blackhole") == {}


def test_a_hung_rank_on_the_ssh_hosts_is_named_with_its_stack(ssh_hosts, tmp_path):
    job = write_job(tmp_path, args=["--out", str(tmp_path), "--hang-rank", "1"], timeouts={"hang": 8})
    r = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-hung",
            cwd=workdir(ssh_hosts), timeout=180)
    assert r.returncode == 124, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run ssh-hung failed: the run hung: no rank made progress for 8 s: rank 0 in "), line
    assert "rank 1 in <module> (rank_probe.py:" in line, line
    stacks = os.path.join(workdir(ssh_hosts), "runs", "ssh-hung", "stacks")
    assert sorted(os.listdir(stacks)) == ["rank0.txt", "rank1.txt"]
    assert leftovers(ssh_hosts, "ssh-hung") == {}


def test_kit_doctor_names_the_same_cause_before_a_run(ssh_hosts, tmp_path):
    import json
    n1, n2 = ssh_hosts.hosts[:2]
    n2.run(["ip", "route", "add", "blackhole", f"{n1.address}/32"])
    try:
        r = kit("doctor", "--cluster", cluster(ssh_hosts, tmp_path), "--format", "json", cwd=workdir(ssh_hosts),
                timeout=120)
    finally:
        n2.run(["ip", "route", "del", "blackhole", f"{n1.address}/32"], check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    rows = {(c["host"], c["check"]): c for c in json.loads(r.stdout)["checks"]}
    bad = rows[("n2", "tcp to master")]
    assert bad["verdict"] == "FAIL" and bad["detail"].startswith(f"it cannot reach the master {n1.address}:"), bad
    assert "(a blackhole route to it)" in bad["detail"]
    good = rows[("n1", "tcp to master")]
    assert good["verdict"] == "ok" and "reachable via " in good["detail"], good

"""A host made to fail (its link down) in one run is avoided by the next run on a cluster with a spare, said in one
line (the dry-run too), and listed by kit hosts with the run and its cause (issue 31 item 3), on the harness's
SSH hosts (the spare: a third name for n1's machine)."""

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.harness.network import wait_reachable
from tests.launcher.localrun import kit, kit_background, reports, wait_for, write_job


def test_a_host_that_was_lost_is_avoided_next_time_and_listed(ssh_hosts, tmp_path):
    n1, n2 = ssh_hosts.hosts[:2]
    hosts = [{"name": "n1", "address": n1.address}, {"name": "n2", "address": n2.address},
             {"name": "n1-spare", "address": n1.address}]
    cfg = cluster(ssh_hosts, tmp_path, hosts=hosts, ssh_options={"host_timeout": 4})
    out = tmp_path / "out"
    out.mkdir()
    lingering = write_job(tmp_path, name="linger", args=["--out", str(out), "--linger", "300"])
    proc = kit_background("submit", lingering, "--cluster", cfg, "--run-id", "health-1", cwd=workdir(ssh_hosts))
    try:
        assert wait_for(lambda: len(reports(out)) == 2, timeout=120), "ranks never reported"
        n2.run(["ip", "link", "set", "eth0", "down"])
        output, _ = proc.communicate(timeout=120)
    finally:
        n2.run(["ip", "link", "set", "eth0", "up"], check=False)
        wait_reachable(n2.address)   # the next test gets the network as this one found it
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 255 and "node 1 (n2) lost" in output, output[-2000:]
    assert wait_for(lambda: leftovers(ssh_hosts, "health-1") == {}, timeout=40)

    listed = kit("hosts", cwd=workdir(ssh_hosts))
    row = next(ln for ln in listed.stdout.splitlines() if ln.startswith("n2 "))
    # Runs of other tests under the harness's shared run root (one whose n2 rank was killed) count too: n2 has at least
    # this run and this failure, and this one, its latest, is why it is avoided.
    host, backend, runs, failures, state = row.split()[:5]
    assert (host, backend, state) == ("n2", "ssh", "avoided:") and int(runs) >= 1 and int(failures) >= 1, row
    assert "failed in run health-1 (lost, " in row
    assert "run health-1 attempt 1: node 1 (n2) lost: no answer for " in listed.stdout, listed.stdout
    assert next(ln for ln in listed.stdout.splitlines() if ln.startswith("n1 ")).split()[-1] == "ok"

    quick = write_job(tmp_path, name="quick", args=["--out", str(tmp_path / "out2")])
    (tmp_path / "out2").mkdir()
    said = "kit: host n2 failed in run health-1 (lost, "
    dry = kit("submit", quick, "--cluster", cfg, "--run-id", "health-2", "--dry-run", cwd=workdir(ssh_hosts))
    assert "host health: host n2 failed in run health-1 (lost, " in dry.stdout and "(from node 0): n1, n1-spare\n" in dry.stdout
    r = kit("submit", quick, "--cluster", cfg, "--run-id", "health-2", cwd=workdir(ssh_hosts), timeout=120)
    assert r.returncode == 0, r.stderr
    moved = [ln for ln in r.stderr.splitlines() if ln.startswith(said)]
    assert len(moved) == 1 and moved[0].endswith("its node goes to spare host n1-spare (kit hosts --clear n2 to use "
                                                 "it again)"), r.stderr
    assert "kit-test host n1" in open(f"{workdir(ssh_hosts)}/runs/health-2/node1.log").read()   # on n1's machine
    assert kit("hosts", "--clear", "n2", cwd=workdir(ssh_hosts)).returncode == 0
    after = kit("submit", quick, "--cluster", cfg, "--run-id", "health-3", "--dry-run", cwd=workdir(ssh_hosts))
    assert "host health" not in after.stdout and "(from node 0): n[1-2]\n" in after.stdout

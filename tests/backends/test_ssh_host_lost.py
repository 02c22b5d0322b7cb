"""A host that drops off the network mid-run (issue 20): kit notices within ssh.host_timeout (SSH keepalive
requests go unanswered), ends the run on the other hosts with `node 1 (n2) lost: no answer for N s`, and the lost
host's watchdog stops the node by itself when it hears nothing from kit, so nothing of the run is left there when
the network comes back. Ctrl-C ends kit within seconds even while a host is unreachable."""

import signal
import time

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.harness.network import wait_reachable
from tests.launcher.localrun import kit, kit_background, reports, wait_for, write_job


def _started(ssh_hosts, tmp_path, run_id):
    out = tmp_path / "out"
    out.mkdir()
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "300"])
    cfg = cluster(ssh_hosts, tmp_path, ssh_options={"host_timeout": 4})
    proc = kit_background("submit", job, "--cluster", cfg, "--run-id", run_id, cwd=workdir(ssh_hosts))
    assert wait_for(lambda: len(reports(out)) == 2, timeout=120), "ranks never reported"
    return proc


def test_a_host_off_the_network_is_lost_and_keeps_nothing(ssh_hosts, tmp_path):
    n2 = ssh_hosts.hosts[1]
    proc = _started(ssh_hosts, tmp_path, "ssh-offline")
    try:
        n2.run(["ip", "link", "set", "eth0", "down"])
        started = time.monotonic()
        output, _ = proc.communicate(timeout=120)
        took = time.monotonic() - started
        assert proc.returncode == 255, output[-3000:]
        assert "kit: run ssh-offline failed: node 1 (n2) lost: no answer for " in output, output[-3000:]
        assert took < 4 + 20, took   # the bound, then node 0's teardown (its ranks stop at once)
        # Off the network, n2's watchdog heard nothing from kit for 2 x host_timeout: it stopped the node.
        assert wait_for(lambda: leftovers(ssh_hosts, "ssh-offline") == {}, timeout=40), \
            leftovers(ssh_hosts, "ssh-offline")
    finally:
        n2.run(["ip", "link", "set", "eth0", "up"], check=False)
        wait_reachable(n2.address)   # the next test gets the network as this one found it
        if proc.poll() is None:
            proc.kill()
    status = kit("status", "ssh-offline", cwd=workdir(ssh_hosts))
    assert "state failed" in status.stdout and "node 1 (n2) lost" in status.stdout, status.stdout


def test_ctrl_c_ends_kit_within_seconds_with_a_host_unreachable(ssh_hosts, tmp_path):
    n2 = ssh_hosts.hosts[1]
    proc = _started(ssh_hosts, tmp_path, "ssh-offline-c")
    try:
        n2.run(["ip", "link", "set", "eth0", "down"])
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
        took = time.monotonic() - started
        assert proc.returncode == 130, output[-3000:]
        assert took < 15, (took, output[-2000:])
        assert "could not clean host(s) n2" in output, output[-2000:]
        assert wait_for(lambda: leftovers(ssh_hosts, "ssh-offline-c") == {}, timeout=40)
    finally:
        n2.run(["ip", "link", "set", "eth0", "up"], check=False)
        wait_reachable(n2.address)   # the next test gets the network as this one found it
        if proc.poll() is None:
            proc.kill()
    status = kit("status", "ssh-offline-c", cwd=workdir(ssh_hosts))
    assert "state cancelled" in status.stdout and "could not be cleaned" in status.stdout, status.stdout


def test_a_lost_host_is_replaced_by_a_spare_and_training_resumes(ssh_hosts, tmp_path):
    """restarts: 1 on a cluster with a spare host (a third name for n1's machine): n2 goes off the network after a
    checkpoint, kit starts the world again with n2's node on the spare, and the training module resumes."""
    import json
    import os

    import yaml

    from tests.train.support import resumable_args, synthetic_rows, write_csv
    n1, n2 = ssh_hosts.hosts[:2]
    data = write_csv(tmp_path / "d.csv", synthetic_rows(400))
    out = tmp_path / "out"
    args = resumable_args(data, out, tmp_path / "cache", "--max-steps", "60", "--save-every", "10",
                          "--no-save-model", "--log-every", "10")
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "spare", "entrypoint": {"module": "train"}, "args": args, "nodes": 2,
                                   "procs_per_node": 1, "restarts": 1}))
    hosts = [{"name": "n1", "address": n1.address}, {"name": "n2", "address": n2.address},
             {"name": "n1-spare", "address": n1.address}]
    cfg = cluster(ssh_hosts, tmp_path, hosts=hosts, ssh_options={"host_timeout": 4})
    proc = kit_background("submit", str(job), "--cluster", cfg, "--run-id", "ssh-spare", cwd=workdir(ssh_hosts))
    try:
        ckpts = out / "checkpoints"
        assert wait_for(lambda: ckpts.is_dir() and any(n.startswith("step-") for n in os.listdir(ckpts)),
                        timeout=300), "no checkpoint"
        n2.run(["ip", "link", "set", "eth0", "down"])
        output, _ = proc.communicate(timeout=600)
    finally:
        n2.run(["ip", "link", "set", "eth0", "up"], check=False)
        wait_reachable(n2.address)   # the next test gets the network as this one found it
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-4000:]
    assert "kit: run ssh-spare attempt 2/2 after: node 1 (n2) lost: no answer for " in output, output[-4000:]
    resumed = [ln for ln in output.splitlines() if "resumed from" in ln]
    assert resumed and " at step 0 " not in resumed[0], resumed
    status = json.load(open(os.path.join(workdir(ssh_hosts), "runs", "ssh-spare", "status.json")))
    assert status["state"] == "succeeded" and [n["host"] for n in status["nodes"]] == ["n1", "n1-spare"]
    assert wait_for(lambda: leftovers(ssh_hosts, "ssh-spare") == {}, timeout=40)

"""Before anything starts: unknown host keys, unreachable hosts and a wrong python each fail with one line naming
the host, within the connect timeout, and leave no run behind; secrets reach the nodes only over the channel."""

import os
import sys
import time

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.harness.configs import ssh_cluster_config
from tests.launcher.localrun import kit, write_job


def _submit(ssh_hosts, tmp_path, cfg, run_id, timeout=60):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    job = write_job(tmp_path, args=["--out", str(out), "--linger", "1"])  # see test_ssh_run: the probe's exit race
    return kit("submit", job, "--cluster", cfg, "--run-id", run_id, cwd=workdir(ssh_hosts), timeout=timeout)


def _no_run(ssh_hosts, run_id):
    assert not os.path.exists(f"{workdir(ssh_hosts)}/runs/{run_id}")
    assert leftovers(ssh_hosts, run_id) == {}


def test_unknown_host_key_is_refused_before_anything_starts(ssh_hosts, tmp_path):
    known = tmp_path / "known_hosts"
    n1 = ssh_hosts.hosts[0]
    # Only n1's key is known: n2 must be refused, with the way to add its key.
    line = next(ln for ln in open(ssh_hosts.known_hosts) if ln.startswith(f"{n1.name},"))
    known.write_text(line)
    cfg = cluster(ssh_hosts, tmp_path, ssh_options={"known_hosts": str(known)})
    result = _submit(ssh_hosts, tmp_path, cfg, "ssh-unknown-key")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("kit: error: host n2 ("), result.stderr
    assert "host key unknown" in result.stderr and "ssh-keyscan" in result.stderr
    assert "Traceback" not in result.stderr
    _no_run(ssh_hosts, "ssh-unknown-key")


def test_unreachable_host_fails_within_the_connect_timeout(ssh_hosts, tmp_path):
    hosts = [{"name": "n1", "address": ssh_hosts.hosts[0].address},
             {"name": "ghost", "address": ssh_hosts.bed.unused_address}]
    cfg = cluster(ssh_hosts, tmp_path, hosts=hosts, ssh_options={"connect_timeout": 2.0})
    started = time.monotonic()
    result = _submit(ssh_hosts, tmp_path, cfg, "ssh-unreachable")
    took = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert "kit: error: host ghost (" in result.stderr and "n1" not in result.stderr.splitlines()[-1]
    assert took < 2.0 + 3.0, took  # the timeout plus kit's own start-up
    _no_run(ssh_hosts, "ssh-unreachable")


def test_wrong_python_fails_before_launch_naming_the_host(ssh_hosts, tmp_path):
    cfg = cluster(ssh_hosts, tmp_path, python="/opt/no-such/bin/python")
    result = _submit(ssh_hosts, tmp_path, cfg, "ssh-bad-python")
    assert result.returncode == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("kit: error:")]
    assert [ln.split()[3] for ln in lines] == ["n1:", "n2:"], result.stderr
    assert all("/opt/no-such/bin/python" in ln for ln in lines)
    _no_run(ssh_hosts, "ssh-bad-python")


def test_a_host_without_accelerate_is_named_before_anything_starts(ssh_hosts, tmp_path):
    """Issue 41 item 7: n2's python lacks accelerate (its package directory empty there): one line naming the host,
    the interpreter and the fix, exit 2, nothing started on n1 either; no traceback 4 s into the launch."""
    from tests.backends.drift import emptied_on, package_dir
    with emptied_on(ssh_hosts.hosts[1], package_dir("accelerate")):
        result = _submit(ssh_hosts, tmp_path, cluster(ssh_hosts, tmp_path), "ssh-no-accelerate")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("kit: error:")]
    assert lines == [f"kit: error: host n2: {sys.executable} has no module accelerate (pip install accelerate there, "
                     f"or point the cluster config's python: or setup: at an environment that has it)"], result.stderr
    assert "Traceback" not in result.stderr and "No module named" not in result.stderr
    _no_run(ssh_hosts, "ssh-no-accelerate")


def test_secrets_reach_the_node_but_no_command_line_or_record(ssh_hosts, tmp_path):
    secret = "s3cr3t-value-do-not-print"
    cfg = cluster(ssh_hosts, tmp_path, env={"API_TOKEN": secret},
                  setup=['echo "kit-test token sha $(printf %s "$API_TOKEN" | sha256sum | cut -c1-12)"'])
    result = _submit(ssh_hosts, tmp_path, cfg, "ssh-secret")
    import hashlib
    want = hashlib.sha256(secret.encode()).hexdigest()[:12]
    assert result.returncode == 0, result.stderr
    assert f"kit-test token sha {want}" in result.stdout  # the node's setup saw the value...
    record = f"{workdir(ssh_hosts)}/runs/ssh-secret"
    for name in os.listdir(record):
        if os.path.isfile(f"{record}/{name}"):
            assert secret not in open(f"{record}/{name}", errors="replace").read(), name



def test_missing_entrypoint_fails_before_launch_naming_the_host(ssh_hosts, tmp_path):
    job = write_job(tmp_path, args=[])
    text = open(job).read().replace("rank_probe.py", "no_such_probe.py")
    open(job, "w").write(text)
    result = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-no-entry",
                 cwd=workdir(ssh_hosts), timeout=60)
    assert result.returncode == 2
    assert "kit: error: host n1: entrypoint.script" in result.stderr and "no such file" in result.stderr
    _no_run(ssh_hosts, "ssh-no-entry")


def test_busy_master_port_fails_before_launch_naming_the_master_host(ssh_hosts, tmp_path):
    import subprocess
    import sys
    n1 = ssh_hosts.hosts[0]
    port = 29411
    # Listens until its stdin closes (killing nsenter would not reach it inside the host's PID namespace).
    listener = n1.popen([sys.executable, "-c", f"import socket,sys; s=socket.socket(); s.bind(('', {port})); "
                         "s.listen(); print('up', flush=True); sys.stdin.read()"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().strip() == "up"
        out = tmp_path / "out"
        out.mkdir()
        job = write_job(tmp_path, args=["--out", str(out)])
        result = kit("submit", job, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-busy-port",
                     "--port", str(port), cwd=workdir(ssh_hosts), timeout=60)
        assert result.returncode == 2
        assert f"kit: error: host n1: master port {port} is in use" in result.stderr, result.stderr
        _no_run(ssh_hosts, "ssh-busy-port")
    finally:
        listener.stdin.close()
        listener.wait(10)

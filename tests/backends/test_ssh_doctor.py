"""`kit doctor` against the real sshd hosts: every check passes on a healthy cluster; an unreachable host fails
within the connect timeout, naming the host; a wrong python fails on every host."""

import json
import time

from tests.backends.sshrun import cluster, workdir
from tests.launcher.localrun import PROBE, kit, write_job


def _doctor(ssh_hosts, cfg, *extra):
    return kit("doctor", "--cluster", cfg, "--format", "json", *extra, cwd=workdir(ssh_hosts), timeout=120)


def test_healthy_cluster_passes_every_check(ssh_hosts, tmp_path):
    job = write_job(tmp_path, args=["--out", str(tmp_path)])
    result = _doctor(ssh_hosts, cluster(ssh_hosts, tmp_path), "--job", job)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    checks = {(c["host"], c["check"]): c for c in report["checks"]}
    for host in ("n1", "n2"):
        for check in ("ssh", "sftp", "python", "modules", "disk", "entrypoint", "version torch",
                      "version accelerate", "tcp to master"):
            assert checks[(host, check)]["verdict"] == "ok", checks[(host, check)]
        assert checks[(host, "gpus")]["verdict"] == "skipped"
    assert checks[("n1", "master port")]["verdict"] == "ok"
    text = kit("doctor", "--cluster", cluster(ssh_hosts, tmp_path), cwd=workdir(ssh_hosts), timeout=120)
    assert text.returncode == 0 and "every check passed" in text.stdout


def test_unreachable_host_fails_doctor_within_the_timeout(ssh_hosts, tmp_path):
    hosts = [{"name": "n1", "address": ssh_hosts.hosts[0].address},
             {"name": "ghost", "address": ssh_hosts.bed.unused_address}]
    cfg = cluster(ssh_hosts, tmp_path, hosts=hosts, ssh_options={"connect_timeout": 2.0})
    started = time.monotonic()
    result = _doctor(ssh_hosts, cfg)
    assert time.monotonic() - started < 2.0 + 6.0
    assert result.returncode == 1
    checks = {(c["host"], c["check"]): c for c in json.loads(result.stdout)["checks"]}
    assert checks[("ghost", "ssh")]["verdict"] == "FAIL" and "host ghost" in checks[("ghost", "ssh")]["detail"]
    assert checks[("n1", "ssh")]["verdict"] == "ok"


def test_a_host_without_accelerate_fails_the_same_check_a_run_makes(ssh_hosts, tmp_path):
    """Issue 41 item 7: the package's metadata is still there, its code is not (an empty directory on n2): the
    versions read fine, the modules check (find_spec, as `kit submit`'s checks) names what is missing."""
    import sys
    from tests.backends.drift import emptied_on, package_dir
    job = write_job(tmp_path, args=["--out", str(tmp_path)])
    with emptied_on(ssh_hosts.hosts[1], package_dir("accelerate")):
        result = _doctor(ssh_hosts, cluster(ssh_hosts, tmp_path), "--job", job)
    assert result.returncode == 1, result.stdout + result.stderr
    checks = {(c["host"], c["check"]): c for c in json.loads(result.stdout)["checks"]}
    assert checks[("n1", "modules")]["verdict"] == "ok", checks[("n1", "modules")]
    assert checks[("n2", "modules")]["verdict"] == "FAIL"
    assert checks[("n2", "modules")]["detail"].startswith(f"{sys.executable} has no module accelerate (pip install")


def test_wrong_python_fails_on_every_host(ssh_hosts, tmp_path):
    result = _doctor(ssh_hosts, cluster(ssh_hosts, tmp_path, python="/opt/no-such/python"))
    assert result.returncode == 1
    checks = {(c["host"], c["check"]): c for c in json.loads(result.stdout)["checks"]}
    assert all(checks[(h, "python")]["verdict"] == "FAIL" for h in ("n1", "n2"))


def test_doctor_takes_a_script_or_a_module_as_kit_submit_does(ssh_hosts, tmp_path):
    # A script is a job built from the command line, not a YAML file to parse.
    checks = {(c["host"], c["check"]): c for c in
              json.loads(_doctor(ssh_hosts, cluster(ssh_hosts, tmp_path), "--job", PROBE).stdout)["checks"]}
    assert all(checks[(h, "entrypoint")]["verdict"] == "ok" for h in ("n1", "n2")), checks
    result = _doctor(ssh_hosts, cluster(ssh_hosts, tmp_path), "-m", "no_such_module_here")
    assert result.returncode == 1
    checks = {(c["host"], c["check"]): c for c in json.loads(result.stdout)["checks"]}
    assert "entrypoint.module no_such_module_here: not importable" in checks[("n1", "entrypoint")]["detail"]

"""A backend that ships as a package of its own (tests/plugins/kit_echo_backend, found through its `kit.backends`
entry point, with no change to launcher/): its config section, its record handle, its doctor rows, its warm-up and
its help text are its own, and a 1-node job runs through kit submit / status / logs / cancel.

The package is put on the path of the kit processes the test starts, beside a .dist-info that declares its entry
point, as an installed package would be: nothing is installed into the test's interpreter."""

import json
import os

import pytest
import yaml

from tests.launcher.localrun import REPO, kit, pids_of_run, wait_for

PLUGIN = os.path.join(REPO, "tests", "plugins", "kit_echo_backend")
QUIET_PRINTER = os.path.join(REPO, "tests", "launcher", "scripts", "quiet_printer.py")


@pytest.fixture
def plugin_env(tmp_path):
    """kit's environment with the echo backend on its path, as pip would lay it out (its metadata in a
    .dist-info, its package importable)."""
    site = tmp_path / "site"
    info = site / "kit_echo_backend-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kit-echo-backend\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[kit.backends]\necho = kit_echo_backend\n")
    path = os.pathsep.join(p for p in (str(site), PLUGIN, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _files(tmp_path, **section) -> tuple[str, str]:
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "echoed", "entrypoint": {"script": QUIET_PRINTER}, "nodes": 1,
                                   "procs_per_node": 1, "env": {"QUIET_PRINTER_SLEEP": "300"}}))
    cluster = tmp_path / "echo.yaml"
    cluster.write_text(yaml.safe_dump({"name": "echoes", "backend": "echo", "cpu_threads_per_process": 1,
                                       **({"echo": section} if section else {})}))
    return str(job), str(cluster)


def test_the_echo_backend_is_a_package_of_its_own():
    # Nothing of it is in kit: kit's own distribution declares its three backends only.
    assert not os.path.exists(os.path.join(REPO, "launcher", "backends", "echo"))
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as f:
        assert "kit_echo_backend" not in f.read()
    r = kit("runs", "--help", cwd=REPO)
    assert "echo" not in r.stdout.split("--backend", 1)[1].split("--since")[0]


@pytest.mark.slow
def test_a_job_runs_through_submit_status_logs_cancel(tmp_path, plugin_env):
    job, cluster = _files(tmp_path, greeting="hi there")
    r = kit("submit", job, "--cluster", cluster, "--run-id", "echo-run", "--detach", cwd=tmp_path, env=plugin_env)
    assert r.returncode == 0, r.stderr
    assert "echo: warming up" in r.stderr   # its warm-up, while kit planned the run
    try:
        assert wait_for(lambda: "says hello" in kit("logs", "echo-run", cwd=tmp_path, env=plugin_env).stdout,
                        timeout=90), kit("logs", "echo-run", cwd=tmp_path, env=plugin_env)
        status = kit("status", "echo-run", cwd=tmp_path, env=plugin_env)
        assert status.returncode == 0 and "backend echo" in status.stdout and "state running" in status.stdout, \
            status.stdout + status.stderr
        record = json.loads((tmp_path / "runs" / "echo-run" / "status.json").read_text())
        assert record["backend"] == "echo" and record["handle"] == {"greeting": "hi there"}, record
        assert "echo: hi there" in (tmp_path / "runs" / "echo-run" / "console.log").read_text()
        cancel = kit("cancel", "echo-run", cwd=tmp_path, env=plugin_env)
        assert cancel.returncode == 0, cancel.stderr
        assert pids_of_run("echo-run") == []
        after = kit("status", "echo-run", "--json", cwd=tmp_path, env=plugin_env)
        assert json.loads(after.stdout)["state"] == "cancelled", after.stdout
    finally:
        kit("cancel", "echo-run", cwd=tmp_path, env=plugin_env)


def test_its_section_help_dry_run_and_doctor_are_its_own(tmp_path, plugin_env):
    job, cluster = _files(tmp_path, greeting="good day")
    dry = kit("submit", job, "--cluster", cluster, "--dry-run", cwd=tmp_path, env=plugin_env)
    assert dry.returncode == 0 and "cluster echoes (echo)" in dry.stdout, dry.stderr
    assert "echo: 1 node(s) on this machine" in dry.stdout
    doctor = kit("doctor", "--cluster", cluster, cwd=tmp_path, env=plugin_env)
    assert doctor.returncode == 0 and "greeting  PASS" in doctor.stdout and "good day" in doctor.stdout, doctor.stdout
    helped = kit("--help", cwd=tmp_path, env=plugin_env).stdout + kit("runs", "--help", cwd=tmp_path,
                                                                     env=plugin_env).stdout
    assert "echo: that it can say" in " ".join(helped.split()) and "echo, local" in " ".join(helped.split())
    # Its section's keys are its own; on another backend's cluster it is another backend's section.
    _, bad = _files(tmp_path, greting="hi")
    r = kit("submit", job, "--cluster", bad, "--dry-run", cwd=tmp_path, env=plugin_env)
    assert r.returncode == 2 and "unknown key 'echo.greting'; did you mean 'echo.greeting'?" in r.stderr, r.stderr
    local = tmp_path / "local.yaml"
    local.write_text(yaml.safe_dump({"name": "l", "backend": "local", "echo": {"greeting": "hi"}}))
    r = kit("submit", job, "--cluster", str(local), "--dry-run", cwd=tmp_path, env=plugin_env)
    assert r.returncode == 2 and "echo: section given but backend is local" in r.stderr, r.stderr


def test_without_the_package_kit_says_it_has_no_such_backend(tmp_path):
    job, cluster = _files(tmp_path)
    r = kit("submit", job, "--cluster", cluster, "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and "'echo' is not a backend kit has; use one of: local, slurm, ssh" in r.stderr, \
        r.stderr

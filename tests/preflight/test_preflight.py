"""Preflight: a missing script or module, a failing setup line and a busy master port stop a run before anything
is written or started, with one line; a node whose setup fails stops with that line too."""

import os
import socket
import subprocess
import sys

import pytest

from launcher.backends.local.preflight import port_is_free, preflight
from launcher.errors import KitError
from launcher.planning.build import build_plan
from launcher.preflight.entrypoint import CheckResult, entrypoint_check_command, interpret_entrypoint_check
from launcher.render.shell import node_command
from launcher.spec import ClusterSpec, JobSpec, Overrides
from tests.launcher.localrun import REPO, kit


def local_plan(tmp_path, entrypoint, **cluster_fields):
    job = JobSpec.model_validate({"name": "p", "entrypoint": entrypoint, **cluster_fields.pop("job", {})})
    cluster = ClusterSpec.model_validate({"name": "l", "backend": "local", **cluster_fields})
    port = free_port()
    plan = build_plan(job, cluster, Overrides(master_port=port), "r", default_python=sys.executable)
    return plan, job, cluster


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def check(tmp_path, entrypoint, **fields):
    plan, job, cluster = local_plan(tmp_path, entrypoint, **fields)
    preflight(plan, job.entrypoint, cluster.workdir, str(tmp_path), environ=dict(os.environ))


def test_module_found_in_the_node_workdir(tmp_path):
    (tmp_path / "work" / "mypkg").mkdir(parents=True)
    (tmp_path / "work" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "work" / "mypkg" / "run.py").write_text("")
    check(tmp_path, {"module": "mypkg.run"}, workdir="work")
    with pytest.raises(KitError, match=r"^entrypoint\.module trian: not importable by .*python.* in "
                                       + str(tmp_path / "work")):
        check(tmp_path, {"module": "trian"}, workdir="work")
    with pytest.raises(KitError, match="entrypoint.module mypkg.nope: not importable"):
        check(tmp_path, {"module": "mypkg.nope"}, workdir="work")


def test_the_reference_module_outside_a_clone_says_where_it_lives(tmp_path):
    # Installing kit installs no `train` (issue 36): from a workdir without the repository's train/, the line says
    # so; in one that holds it, the check passes.
    (tmp_path / "work").mkdir()
    with pytest.raises(KitError) as e:
        check(tmp_path, {"module": "train"}, workdir="work")
    assert str(e.value) == (f"entrypoint.module train: not importable by {sys.executable} in {tmp_path / 'work'} (no "
                            f"such module); the reference job's module is the top-level train/ of kit's repository, "
                            f"which installing kit does not install: run kit from a clone of it, or make the "
                            f"cluster's workdir one")
    os.symlink(os.path.join(REPO, "train"), tmp_path / "work" / "train")
    check(tmp_path, {"module": "train"}, workdir="work")


def test_dotted_module_check_imports_nothing(tmp_path):
    # A package whose __init__ is slow or heavy (torch) is found without running it.
    pkg = tmp_path / "heavy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(tmp_path / 'IMPORTED')!r}, 'w').close()\n")
    (pkg / "main.py").write_text("")
    check(tmp_path, {"module": "heavy.main"})
    assert not (tmp_path / "IMPORTED").exists()


def test_package_without_main_cannot_run(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    with pytest.raises(KitError, match="a package without __main__.py"):
        check(tmp_path, {"module": "pkg"})
    (tmp_path / "pkg" / "__main__.py").write_text("")
    check(tmp_path, {"module": "pkg"})


def test_module_path_from_the_job_env_counts(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "onlyhere.py").write_text("")
    with pytest.raises(KitError):
        check(tmp_path, {"module": "onlyhere"})
    check(tmp_path, {"module": "onlyhere"}, job={"env": {"PYTHONPATH": "src"}})


def test_script_resolved_as_the_node_sees_it(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "train.py").write_text("")
    check(tmp_path, {"script": "train.py"}, workdir="work")
    with pytest.raises(KitError, match=r"^entrypoint\.script train\.py: no such file in the node's workdir "
                                       + str(tmp_path)):
        check(tmp_path, {"script": "train.py"})


@pytest.mark.parametrize("fields, line", [
    ({"workdir": "missing dir"}, "node setup failed (exit 1): cd 'missing dir'"),
    ({"setup": ["source venv/bin/activate"]}, "node setup failed (exit 1): source venv/bin/activate"),
    ({"setup": ["true", "false  # a comment cannot hide it"]}, "node setup failed (exit 1): false"),
])
def test_failing_setup_stops_preflight_with_its_line(tmp_path, fields, line):
    (tmp_path / "t.py").write_text("")
    with pytest.raises(KitError) as e:
        check(tmp_path, {"script": "t.py"}, **fields)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_check_uses_the_plans_interpreter(tmp_path):
    (tmp_path / "t.py").write_text("")
    with pytest.raises(KitError, match=r"checking the entrypoint with /no/such/python failed \(exit 127\)"):
        check(tmp_path, {"script": "t.py"}, python="/no/such/python")


def test_busy_port_named_with_a_free_one(tmp_path):
    (tmp_path / "t.py").write_text("")
    plan, job, cluster = local_plan(tmp_path, {"script": "t.py"})
    port = plan.world.master_port
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        assert not port_is_free(port)
        with pytest.raises(KitError) as e:
            preflight(plan, job.entrypoint, cluster.workdir, str(tmp_path), environ={})
    message = str(e.value)
    assert message.startswith(f"master port {port} is already in use on this machine")
    suggested = int(message.rsplit("--port ", 1)[1])
    assert suggested != port and port_is_free(suggested)


def test_check_command_is_the_node_preamble_plus_the_check(tmp_path):
    """What a remote backend would run over SSH and read back with the same interpreter function."""
    job = JobSpec(name="p", entrypoint={"module": "train"})
    cluster = ClusterSpec(name="s", backend="ssh", hosts=["a"], workdir="/srv/w", setup=["module load x"],
                          python="/srv/venv/bin/python")
    node = build_plan(job, cluster, Overrides(), "r").nodes[0]
    command = entrypoint_check_command(node, job.entrypoint)
    preamble = node.command.rsplit("exec ", 1)[0]
    assert command.startswith(preamble) and "module load x" in preamble
    assert command[len(preamble):].startswith("exec /srv/venv/bin/python -c ")
    assert command.endswith(" module train\n")
    ok = CheckResult(0, "kit-preflight:found\n", "")
    assert interpret_entrypoint_check(job.entrypoint, node, ok, "a:/srv/w") is None
    missing = CheckResult(0, "kit-preflight:missing\n", "")
    assert "not importable by /srv/venv/bin/python in a:/srv/w" in interpret_entrypoint_check(
        job.entrypoint, node, missing, "a:/srv/w")
    setup = CheckResult(1, "", "bash: module: command not found\nkit: node setup failed (exit 127): module load x\n")
    assert interpret_entrypoint_check(job.entrypoint, node, setup, "a:/srv/w").startswith(
        "node setup failed (exit 127): module load x")


def test_kit_submit_stops_before_writing_anything(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("name: typo\nentrypoint: {module: trian}\n")
    r = kit("submit", str(job), "--cluster", os.path.join(REPO, "cluster_configs", "local.yaml"), cwd=tmp_path,
            timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("kit: error: entrypoint.module trian:")
    assert os.listdir(tmp_path) == ["job.yaml"]


@pytest.mark.parametrize("workdir, setup, message", [
    ("/no/such/workdir", (), "kit: node setup failed (exit 1): cd /no/such/workdir"),
    (".", ("source venv/bin/activate",), "kit: node setup failed (exit 1): source venv/bin/activate"),
    (".", ("echo 'it''s $(quoted)' # comment", "exit_code_7() { return 7; }; exit_code_7"),
     "kit: node setup failed (exit 7): exit_code_7() { return 7; }; exit_code_7"),
])
def test_node_stops_at_a_failing_setup_line(tmp_path, workdir, setup, message):
    """The node's own command (no preflight): the launch line is never reached, one line says why."""
    text = node_command(workdir, setup, {"A": "1"}, ("echo", "LAUNCHED"))
    r = subprocess.run(["bash", "-c", text], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "LAUNCHED" not in r.stdout
    assert r.stderr.splitlines()[-1] == message


def test_node_with_good_setup_launches(tmp_path):
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "activate").write_text("export ACTIVATED=yes\nfalse\n")
    text = node_command(".", ("source venv/bin/activate || true", "cd ."), {}, ("sh", "-c", "echo $ACTIVATED"))
    r = subprocess.run(["bash", "-c", text], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "yes\n" and r.stderr == ""


def test_arguments_with_newlines_do_not_confuse_the_check(tmp_path):
    (tmp_path / "t.py").write_text("")
    check(tmp_path, {"script": "t.py"}, job={"args": ["line\nbreak", "\nexec false\n", "$(touch pwned)"]})
    assert not (tmp_path / "pwned").exists()


def test_marked_lines_are_read_wherever_the_marker_starts():
    from launcher.preflight.entrypoint import after_marker
    text = "Welcome to n1 kit-probe:python /usr/bin/python3\nnoise\nkit-probe:port free\n"
    assert after_marker(text, "kit-probe:") == ["python /usr/bin/python3", "port free"]
    assert after_marker("nothing marked\n", "kit-probe:") == []


def test_ctrl_c_during_the_checks_is_one_line_and_kills_the_setup_lines_processes(tmp_path):
    """A setup line still running (a slow `module load`) when the user presses Ctrl-C: one line, exit 130, no
    record, and nothing the setup line started is left (it used to leave `sleep` behind and print a traceback)."""
    import signal
    import time
    (tmp_path / "ok.py").write_text("print('ok')\n")
    seconds = str(3000 + os.getpid() % 997)   # a sleep of its own length, found by its argv
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", "ok.py", "--nodes", "2", "--gpus", "0",
                             "--run-id", "int", "--set", f'cluster.setup=["sleep {seconds}", "true"]'],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def setup_running():
        return [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == f"sleep\0{seconds}\0".encode()]
    deadline = time.monotonic() + 60
    while not setup_running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert setup_running(), "the setup line never started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err == "kit: interrupted; nothing was started\n", err
    time.sleep(0.5)
    assert setup_running() == []
    assert not (tmp_path / "runs").exists()


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""

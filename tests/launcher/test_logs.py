"""kit's own lines are logged (launcher/logs.py, issue 36): no module of launcher/ but the CLI (cli.py, commands/)
prints; the CLI's console handler writes each line as is, -v adds the debug lines and -q keeps only warnings and
errors; the Python API installs no handler of its own."""

import ast
import io
import logging
import os
import subprocess
import sys

from tests.launcher.localrun import LOCAL_CLUSTER, REPO, kit

LAUNCHER = os.path.join(REPO, "launcher")
JOB = os.path.join(REPO, "tests", "launcher", "scripts", "one_process.py")


def _speaking_calls():
    """Calls of print() in launcher/, outside cli.py and commands/."""
    found = []
    for folder, _, names in os.walk(LAUNCHER):
        for name in sorted(names):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, LAUNCHER)
            if not name.endswith(".py") or rel == "cli.py" or rel.startswith("commands" + os.sep):
                continue
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                        and node.func.id == "print":
                    found.append(f"launcher/{rel}:{node.lineno}: {node.func.id}()")
    return found


def test_no_print_outside_the_cli():
    import launcher.errors
    assert _speaking_calls() == [] and not hasattr(launcher.errors, "note")   # errors.note() printed, once


def test_the_checker_sees_a_print(tmp_path, monkeypatch):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "x.py").write_text("import sys\nprint('kit: hi', file=sys.stderr)\n")
    (tmp_path / "cli.py").write_text("print('usage')\n")
    monkeypatch.setattr(sys.modules[__name__], "LAUNCHER", str(tmp_path))
    assert _speaking_calls() == [f"launcher/core{os.sep}x.py:2: print()"]


def test_the_console_writes_the_message_as_is_on_the_stderr_of_the_moment(monkeypatch):
    from launcher.logs import setup_console
    setup_console(logging.INFO)
    setup_console(logging.INFO)   # again (main() twice in one process): still one handler
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logging.getLogger("launcher.core.launch").info("\nkit: run r (%d process on 1 node)", 1)
    monkeypatch.setattr(sys, "stderr", second)   # a forked child's console file
    logging.getLogger("launcher.backends.ssh.node").warning("kit: warning: x")
    logging.getLogger("launcher.transport.ssh").debug("kit: debug: not shown at INFO")
    assert first.getvalue() == "\nkit: run r (1 process on 1 node)\n" and second.getvalue() == "kit: warning: x\n"


def test_a_console_that_went_away_loses_the_line_not_the_run(monkeypatch):
    from launcher.logs import setup_console
    setup_console(logging.INFO)

    class Gone(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(sys, "stderr", Gone())
    logging.getLogger("launcher.core.launch").warning("kit: warning: nobody reads this")   # no exception


def _submit(tmp_path, run_id, *flags, code=0):
    return kit("submit", JOB, "--cluster", LOCAL_CLUSTER, "--run-id", run_id, *flags, "--", "--exit", str(code),
               cwd=tmp_path, timeout=180)


def test_quiet_keeps_only_warnings_and_errors(tmp_path):
    r = _submit(tmp_path, "quiet-fails", "-q", code=3)
    assert r.returncode == 3, r.stderr
    kits = [ln for ln in r.stderr.splitlines() if ln.startswith("kit:")]
    assert len(kits) == 1 and kits[0].startswith("kit: run quiet-fails failed: "), r.stderr   # the verdict stays
    r = kit("-q", "submit", JOB, "--cluster", LOCAL_CLUSTER, "--run-id", "quiet-ok", cwd=tmp_path, timeout=180)
    assert r.returncode == 0 and "kit:" not in r.stderr, r.stderr       # before the command too


def test_verbose_adds_debug_lines_to_the_usual_ones(tmp_path):
    r = _submit(tmp_path, "loud", "-v")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert "kit: debug: run loud: backend local (launcher.backends.local.backend)" in lines, r.stderr
    said = [ln for ln in lines if ln.startswith("kit: run loud")]
    assert said[0].startswith("kit: run loud (1 process on 1 node); record in ") and \
        said[-1] == "kit: run loud succeeded (exit code 0)", r.stderr


def test_verbose_and_quiet_exclude_each_other(tmp_path):
    r = kit("submit", JOB, "-v", "-q", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not allowed with argument" in r.stderr, r.stderr


def test_the_python_api_prints_nothing_of_its_own_until_logging_is_configured():
    program = ("import logging, kit\n"
               "log = logging.getLogger('launcher.core.launch')\n"
               "log.info('kit: run r (1 process on 1 node)')\n"
               "log.warning('kit: warning: w')\n"
               "logging.basicConfig(level=logging.INFO, format='%(message)s')\n"
               "log.info('kit: run r succeeded (exit code 0)')\n")
    r = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == ""
    # No handler from kit: Python's last resort shows warnings only, then the program's own configuration rules.
    assert r.stderr == "kit: warning: w\nkit: run r succeeded (exit code 0)\n", r.stderr


def test_a_detached_supervisor_writes_every_line_to_its_console_file_whatever_q(tmp_path):
    r = kit("-q", "submit", JOB, "--cluster", LOCAL_CLUSTER, "--run-id", "quiet-detached", "--detach", "--",
            "--exit", "3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert kit("wait", "quiet-detached", cwd=tmp_path, timeout=120).returncode == 3
    console = (tmp_path / "runs" / "quiet-detached" / "console.log").read_text()
    assert console.endswith("\nkit: run quiet-detached failed: node 0 (localhost) exited 3: one process done after "
                            "0 s, exit 3\n"), console


def test_quiet_still_says_why_a_sweep_stopped_and_how_to_follow_a_detached_one(tmp_path):
    """-q keeps warnings and errors: a sweep's bad metric (exit 2, no table) and a trial's failure are said; a
    detached sweep's how-to-follow line (its id) is the command's answer and is said too."""
    from tests.sweeps.sweeprun import probe_job

    job = probe_job(tmp_path, {"metric": "nosuch", "parameters": {"--x": [1]}})
    r = kit("-q", "submit", job, "--run-id", "quietbad", cwd=tmp_path, timeout=300)
    assert r.returncode == 2 and "sweep.metric" in r.stderr and "nosuch" in r.stderr, (r.stdout, r.stderr)
    failing = probe_job(tmp_path, {"parameters": {"--fail": [3]}}, name="failing")
    r = kit("-q", "submit", failing, "--run-id", "quietfail", cwd=tmp_path, timeout=300)
    assert r.returncode == 1 and "trial 0 (--fail=3) failed" in r.stderr, (r.stdout, r.stderr)
    ok = probe_job(tmp_path, {"parameters": {"--x": [1]}}, name="ok")
    r = kit("-q", "submit", ok, "--run-id", "quietdetach", "--detach", cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and "quietdetach" in r.stderr, (r.stdout, r.stderr)
    kit("wait", "quietdetach", cwd=tmp_path, timeout=300)

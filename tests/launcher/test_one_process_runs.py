"""One-process runs on this machine (issue 28): no launcher between the node and its rank, so a run that outlives
timeouts.rendezvous is not killed as "never joined", the hang watch covers it, and its exit code or the signal
that killed it is its own."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from tests.launcher.localrun import LOCAL_CLUSTER, REPO, kit, pids_of_run, wait_for

JOB = os.path.join(REPO, "tests", "launcher", "scripts", "one_process.py")


def _submit(tmp_path, run_id, *job_args, sets=(), timeout=120):
    flags = [w for s in sets for w in ("--set", s)]
    return kit("submit", JOB, "--cluster", LOCAL_CLUSTER, "--run-id", run_id, *flags, "--", *job_args,
               cwd=tmp_path, timeout=timeout)


@pytest.mark.slow
def test_a_run_longer_than_the_rendezvous_timeout_succeeds(tmp_path):
    started = time.monotonic()
    r = _submit(tmp_path, "outlives", "--sleep", "14", sets=["timeouts.rendezvous=5"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert time.monotonic() - started >= 14
    assert "one process done after 14 s, exit 0" in r.stdout
    assert r.stderr.strip().splitlines()[-1] == "kit: run outlives succeeded (exit code 0)"


@pytest.mark.slow
def test_a_silent_one_process_run_is_named_hung_with_its_stack(tmp_path):
    r = _submit(tmp_path, "alone-hung", "--sleep", "120", sets=["timeouts.hang=6", "timeouts.rendezvous=5"])
    assert r.returncode == 124, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run alone-hung failed: the run hung: no rank made progress for 6 s: rank 0 in "
                           "<module> (one_process.py:"), line
    stacks = tmp_path / "runs" / "alone-hung" / "stacks"
    assert os.listdir(stacks) == ["rank0.txt"] and "one_process.py" in (stacks / "rank0.txt").read_text()
    assert pids_of_run("alone-hung") == []


def test_its_own_exit_code_is_the_runs(tmp_path):
    r = _submit(tmp_path, "exits-7", "--exit", "7")
    assert r.returncode == 7, r.stderr[-3000:]
    assert r.stderr.strip().splitlines()[-1] == ("kit: run exits-7 failed: node 0 (localhost) exited 7: one process "
                                                 "done after 0 s, exit 7")
    # Nothing of accelerate's simple launcher: no CalledProcessError, no launcher traceback in the node log.
    log = (tmp_path / "runs" / "exits-7" / "node0.log").read_text()
    assert "Traceback" not in log and "CalledProcessError" not in log, log


def test_death_by_a_signal_is_told_as_such(tmp_path):
    r = _submit(tmp_path, "killed", "--signal", "SIGKILL")
    assert r.returncode == 137, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run killed failed: node 0 (localhost) killed by SIGKILL (exit code 137; out of "
                           "memory? the kernel's OOM killer sends SIGKILL"), line
    assert line.endswith(": about to die by SIGKILL"), line
    r = _submit(tmp_path, "segv", "--signal", "SIGSEGV")
    assert r.returncode == 139, r.stderr[-3000:]
    assert "node 0 (localhost) killed by SIGSEGV (exit code 139): about to die by SIGSEGV" in r.stderr


def test_a_killed_one_process_run_is_restarted(tmp_path):
    once = tmp_path / "killed-once"
    r = _submit(tmp_path, "restarted", "--signal", "SIGKILL", "--once", str(once), sets=["restarts=1"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "attempt 2/2 after: node 0 (localhost) killed by SIGKILL" in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "kit: run restarted succeeded (exit code 0)"


@pytest.mark.slow
def test_ctrl_c_in_a_restarts_checks_keeps_the_first_attempts_verdict(tmp_path):
    """Attempt 1 dies by SIGKILL; attempt 2's checks hang in a setup line (it waits once the first attempt left its
    mark) and kit is interrupted there: attempt 2 never started, and that is what kit says (not 'nothing was
    started': attempt 1 ran and its outputs exist)."""
    once = tmp_path / "killed-once"
    cluster = tmp_path / "c.yaml"
    cluster.write_text(yaml.safe_dump({"name": "here", "backend": "local", "cpu_threads_per_process": 1,
                                       "setup": [f"if [ -e {once} ]; then echo checking-again; sleep 300; fi"]}))
    proc = subprocess.Popen([sys.executable, "-m", "launcher", "submit", JOB, "--cluster", str(cluster),
                             "--run-id", "interrupted-restart", "--set", "restarts=1", "--", "--signal", "SIGKILL",
                             "--once", str(once)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert wait_for(lambda: once.exists(), timeout=60)
        status = tmp_path / "runs" / "interrupted-restart" / "status.json"
        assert wait_for(lambda: json.loads(status.read_text()).get("attempts"), timeout=60)
        time.sleep(2)   # in attempt 2's checks, in the setup line's sleep
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "kit: interrupted before attempt 2 started; nothing of it was started, attempt 1 ended failed: node 0 " \
           "(localhost) killed by SIGKILL" in err, err
    assert "nothing was started\n" not in err.replace("nothing of it was started", "")
    final = json.loads(status.read_text())
    assert final["state"] == "failed" and final["exit_code"] == 137, final
    assert pids_of_run("interrupted-restart") == []

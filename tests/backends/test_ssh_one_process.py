"""One-process runs over SSH (issue 28): a run longer than timeouts.rendezvous is not killed as "never joined",
and a rank killed by a signal is told as such, with its exit code as the run's."""

import time

from tests.backends.sshrun import cluster, leftovers, workdir
from tests.launcher.test_one_process_runs import JOB
from tests.launcher.localrun import kit


def test_a_run_longer_than_the_rendezvous_timeout_succeeds(ssh_hosts, tmp_path):
    started = time.monotonic()
    r = kit("submit", JOB, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-outlives",
            "--set", "timeouts.rendezvous=5", "--", "--sleep", "14", cwd=workdir(ssh_hosts), timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert time.monotonic() - started >= 14
    assert "[node0] one process done after 14 s, exit 0" in r.stdout, r.stdout
    assert r.stderr.strip().splitlines()[-1] == "kit: run ssh-outlives succeeded (exit code 0)"


def test_a_rank_killed_by_sigkill_is_told_as_such(ssh_hosts, tmp_path):
    r = kit("submit", JOB, "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-killed",
            "--", "--signal", "SIGKILL", cwd=workdir(ssh_hosts), timeout=120)
    assert r.returncode == 137, r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kit: run ssh-killed failed: node 0 (n1) killed by SIGKILL (exit code 137; out of "
                           "memory?"), line
    assert line.endswith(": about to die by SIGKILL"), line
    assert leftovers(ssh_hosts, "ssh-killed") == {}

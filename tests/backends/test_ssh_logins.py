"""A login kit no longer needs is never killed while the user's rc files run (issue 20): with pyenv in ~/.bashrc,
a login killed during `pyenv rehash` leaves its lock behind and every later login of that user on that host waits
60 s for it. Here n1's ~/.bashrc takes a lock of the same kind for a few seconds and writes on its way out (a
shell whose channel is gone dies there, lock held); kit must let it finish."""

import os
import time
from contextlib import contextmanager

from launcher.backends.ssh.gate import GATE_COMMAND
from launcher.transport.endpoint import resolve
from launcher.transport.hostkeys import Accepted
from launcher.transport.connect import connect
from tests.backends.sshrun import cluster, workdir
from tests.launcher.localrun import kit, wait_for, write_job

LOCK = ".kit-test-rc-lock"
RC = (f'mkdir "$HOME/{LOCK}" 2>/dev/null && {{ sleep 3; echo "rehashed"; echo "rehashed" >&2; '
      f'rmdir "$HOME/{LOCK}"; }}  # kit-test-rc-lock\n')


@contextmanager
def slow_rc(host):
    home = os.path.expanduser("~")
    original = host.run(["cat", f"{home}/.bashrc"]).stdout
    host.run(["sh", "-c", f'cat >> "{home}/.bashrc"'], input=RC)
    try:
        yield lambda: host.run(["test", "-e", f"{home}/{LOCK}"], check=False).returncode == 0
    finally:
        host.run(["sh", "-c", f'cat > "{home}/.bashrc"'], input=original)
        host.run(["rm", "-rf", f"{home}/{LOCK}"], check=False)


def _settings(ssh_hosts) -> dict:
    return {"user": ssh_hosts.user, "identity_file": ssh_hosts.identity_file, "known_hosts": ssh_hosts.known_hosts,
            "connect_timeout": 5.0}


def test_closing_a_login_during_its_rc_files_lets_them_finish(ssh_hosts):
    n1 = ssh_hosts.hosts[0]
    with slow_rc(n1) as locked:
        conn = connect(resolve(n1.name, n1.address, _settings(ssh_hosts)), Accepted())
        conn.open_ahead(GATE_COMMAND)   # what an early login opens; the gate waits for its check after the rc
        assert wait_for(locked, timeout=10)
        started = time.monotonic()
        conn.close()
        assert time.monotonic() - started < 8
        assert wait_for(lambda: not locked(), timeout=10), "the login was killed while its rc file held its lock"


def test_kit_refusing_the_specs_leaves_the_early_logins_to_finish(ssh_hosts, tmp_path):
    """The planner refuses the job (a typo) while kit is already logging in: kit exits at once, and the logins it
    had opened end by themselves."""
    n1 = ssh_hosts.hosts[0]
    job = tmp_path / "typo.yaml"
    job.write_text(f"name: typo\nentrypoint: {{script: x.py}}\nnodes: 2\nstrategy: zero\n")
    with slow_rc(n1) as locked:
        r = kit("submit", str(job), "--cluster", cluster(ssh_hosts, tmp_path), "--run-id", "ssh-typo",
                cwd=workdir(ssh_hosts), timeout=60)
        assert r.returncode == 2 and "strategy" in r.stderr, r.stderr
        assert wait_for(lambda: not locked(), timeout=15), "an abandoned login was killed while its rc held its lock"

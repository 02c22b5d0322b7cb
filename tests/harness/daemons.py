"""Foreground daemons in the root namespace (munged, mariadbd, slurmdbd, slurmctld), tracked by pid.

Each runs in the foreground as our child under `setpriv --pdeathsig KILL`, so it dies with the test process even
when pytest is killed with -9; teardown stops it by its recorded pid, never by name.
"""

import os
import signal
import subprocess
from dataclasses import dataclass

from tests.harness.shell import HarnessError, log_tail


@dataclass
class Daemon:
    name: str
    proc: subprocess.Popen
    log: str
    console: str  # its stdout/stderr: start-up errors from before it opened `log` land here

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def check_alive(self):
        if not self.alive():
            console = log_tail(self.console) if self.console != self.log else ""
            raise HarnessError(f"{self.name} exited {self.proc.returncode}{log_tail(self.log)}{console}")

    def stop(self, grace=3.0):
        """TERM, then KILL after `grace` seconds; always reaps the child."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_daemon(name, argv, log, env=None, console=None):
    """Start argv in the foreground, tied to our life by a parent-death signal. Its stdout/stderr go to `console`
    (default: `log`); pass console= for daemons that write `log` themselves, or every line appears twice."""
    console = console or log
    with open(console, "ab") as out:
        proc = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", *argv], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return Daemon(name, proc, log, console)


def pid_alive(pid):
    """True while a process with this pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def environ_without(*names):
    """A copy of our environment minus `names` (e.g. a SLURM_CONF from the caller's shell)."""
    return {k: v for k, v in os.environ.items() if k not in names}

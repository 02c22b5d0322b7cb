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
    own_pidns: bool = False  # proc is `unshare`, the daemon its only child and PID 1 of a namespace of its own

    @property
    def pid(self):
        """The daemon's pid (root namespace view)."""
        if not self.own_pidns:
            return self.proc.pid
        try:
            children = open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def alive(self):
        return self.proc.poll() is None

    def check_alive(self):
        if not self.alive():
            console = log_tail(self.console) if self.console != self.log else ""
            raise HarnessError(f"{self.name} exited {self.proc.returncode}{log_tail(self.log)}{console}")

    def stop(self, grace=3.0):
        """TERM, then KILL after `grace` seconds; always reaps the child."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
            pid = self.pid
            if not self.alive():
                break
            if pid is None:  # unshare has not forked the daemon yet: nothing below it to orphan
                pid = self.proc.pid
            # Signal the daemon itself, never the unshare above it: that one would die before reaping it.
            os.kill(pid, sig)
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc.wait(5)


def start_daemon(name, argv, log, env=None, console=None, own_pidns=False):
    """Start argv in the foreground, tied to our life by a parent-death signal. Its stdout/stderr go to `console`
    (default: `log`); pass console= for daemons that write `log` themselves, or every line appears twice.

    own_pidns: run it as PID 1 of a new PID namespace, for daemons that fork helpers (slurmctld's slurmscriptd).
    Killed, it takes its helpers with it and the kernel reaps them; otherwise they would be orphaned to PID 1,
    which in some containers never reaps (zombies left behind)."""
    console = console or log
    wrap = ["unshare", "--pid", "--fork", "--kill-child", "--"] if own_pidns else []
    with open(console, "ab") as out:
        proc = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", *wrap, *argv], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return Daemon(name, proc, log, console, own_pidns)


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

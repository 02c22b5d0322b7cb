"""One node on this machine: its command under a watchdog, in a session of its own.

The supervisor holds the write end of the watchdog's stdin: `stop`/`hurry`/`kill` go through it, and if the
supervisor dies (even by SIGKILL) the watchdog reads EOF and stops the node. The same handle shape serves remote
nodes, whose watchdog reads the SSH channel instead.
"""

import subprocess
import sys

import psutil

from launcher.status import NodeStatus
from launcher.supervise import WATCHDOG


class LocalNode:
    def __init__(self, rank: int, host: str, proc: subprocess.Popen):
        self.rank, self.host, self.proc = rank, host, proc
        self.code = None

    @classmethod
    def start(cls, rank: int, host: str, command: str, *, env: dict, cwd: str, log: str, grace: float) -> "LocalNode":
        argv = [sys.executable, WATCHDOG, "--log", log, "--grace", str(grace), "--", "bash", "-c", command]
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return cls(rank, host, proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output_fd(self) -> int:
        assert self.proc.stdout is not None  # a pipe: start() opens the watchdog with stdout=PIPE
        return self.proc.stdout.fileno()

    def record(self) -> NodeStatus:
        """What status.json keeps so that `kit cancel` can find exactly this process later."""
        try:
            started = psutil.Process(self.pid).create_time()
        except psutil.Error:
            started = None
        return NodeStatus(rank=self.rank, host=self.host, pid=self.pid, start=started)

    def send(self, word: str) -> None:
        assert self.proc.stdin is not None  # a pipe: start() opens the watchdog with stdin=PIPE
        try:
            self.proc.stdin.write(word.encode() + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the watchdog has already exited

    def poll(self):
        if self.code is None:
            rc = self.proc.poll()
            if rc is not None:
                self.code = 128 - rc if rc < 0 else rc
        return self.code


def launcher_running(pid: int, argv) -> bool:
    """Whether the node's launcher (its command's last line, exec'd by the node's shell) runs under `pid`."""
    import psutil

    try:
        return any(tuple(p.cmdline()) == tuple(argv) for p in psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return False

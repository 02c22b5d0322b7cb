"""One node on a remote host: the plan's command under the shipped watchdog, in a session of its own there.

The SSH channel is the watchdog's control line: kit writes `stop`/`hurry`/`kill` to its stdin, and when kit dies
(even by SIGKILL) the connection drops, sshd closes that stdin and the watchdog stops the node (EOF = supervisor
gone). Secrets travel as the first stdin line after `go` (encode_env), never in a command line. The watchdog says
its pid (= its session and process-group id) and start time first, for the run record (backends/ssh/boot.py).
"""

import logging
import time
from typing import BinaryIO, Optional

from launcher.status import NodeStatus
from launcher.supervise.watchdog import encode_env
from launcher.supervise.watchdog_output import PROGRESS_LOG_INTERVAL, split_progress

log = logging.getLogger(__name__)
HELLO = "kit-node"
HELLO_TIMEOUT = 30.0
# Field 22 of /proc/PID/stat (start time in clock ticks): pid and start time name one process for good.
STARTTIME = "sed 's/.*) //' /proc/{pid}/stat | cut -d' ' -f20"


class LogFile:
    """The node's log on the submitting machine, written as its output streams in (progress lines thinned)."""

    def __init__(self, path: str):
        self.path, self.failed = path, False
        self.pending = b""
        self._last_progress = 0.0
        self.f: Optional[BinaryIO]
        try:
            self.f = open(path, "ab", buffering=0)
        except OSError as e:
            self.f = None
            self._lost(e)

    def _lost(self, e) -> None:
        """A full disk: one warning, and the node's output keeps streaming (only the log's copy is dropped)."""
        if not self.failed:
            self.failed = True
            log.warning(
                f"kit: warning: node log {self.path}: {e.strerror or e}; its lines are dropped while it "
                f"cannot be written (the console still shows them)"
            )

    def feed(self, data: bytes) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            self._write(line + b"\n")

    def _write(self, line: bytes) -> None:
        progress = split_progress(line)
        if progress is not None:
            now = time.monotonic()
            if now - self._last_progress < PROGRESS_LOG_INTERVAL:
                return
            self._last_progress = now
            line = progress[0] + progress[1]
        if self.f is None:
            return
        try:
            self.f.write(line)
        except OSError as e:
            self._lost(e)

    def close(self) -> None:
        if self.pending:
            self._write(self.pending)
            self.pending = b""
        if self.f is not None:
            try:
                self.f.close()
            except OSError:
                pass


class SshNode:
    def __init__(self, rank: int, host: str, conn, chan, log: LogFile):
        self.rank, self.host, self.conn, self.chan, self.log = rank, host, conn, chan, log
        self.code = None
        self.lost = False  # the connection dropped before the node's exit status came
        self.lost_why = ""
        self.host_timeout = 30.0  # a host silent this long is lost (ssh.host_timeout)
        self.stopping_since: Optional[float] = None
        self.pid: Optional[int] = None  # the watchdog's, once it said hello
        self.start_ticks: Optional[str] = None
        self.started_at: Optional[float] = None
        self._early = b""

    @classmethod
    def attach(cls, rank: int, host: str, conn, chan, *, early: bytes, env: dict, log_path: str) -> "SshNode":
        """Take over a gated channel (backends/ssh/gate.py) that passed its checks, and start the node."""
        chan.sendall(b"go\n" + encode_env(env))
        node = cls(rank, host, conn, chan, LogFile(log_path))
        node._early = early
        node._hello()
        return node

    def _hello(self) -> None:
        """Read up to the watchdog's hello line (pid, start ticks, start time). Before it comes nothing or, if no
        watchdog came up, why (kept)."""
        self.chan.settimeout(HELLO_TIMEOUT)
        data, before = self._early, b""
        while True:
            line, nl, rest = data.partition(b"\n")
            if nl and line.startswith(HELLO.encode() + b" "):
                words = line.decode(errors="replace").split()
                if len(words) == 4:
                    self.pid, self.start_ticks, self.started_at = int(words[1]), words[2], float(words[3])
                self._early = before + rest
                break
            if nl:
                before, data = before + line + b"\n", rest
                continue
            chunk = self.chan.recv(4096)
            if not chunk:  # no watchdog came up (the shell failed): show whatever it said
                self._early = before + data
                break
            data += chunk
        self.chan.settimeout(None)

    def read(self, n: int) -> bytes:
        """For console.follow_node: the node's output, copied into its local log on the way."""
        if self._early:
            data, self._early = self._early, b""
        else:
            data = self.chan.recv(n)
        if data:
            self.log.feed(data)
        else:
            self.log.close()
        return data

    def record(self) -> NodeStatus:
        return NodeStatus(
            rank=self.rank,
            host=self.host,
            address=self.conn.endpoint.hostname,
            pid=self.pid,
            pgid=self.pid,
            start_ticks=self.start_ticks,
            remote_start=self.started_at,
        )

    # While kit stops the run (a failure elsewhere, Ctrl-C), a host that does not answer within this is given up:
    # Ctrl-C ends kit within seconds even with a host off the network; its watchdog stops the node by itself.
    STOP_SILENCE = 4.0

    def send(self, word: str) -> None:
        if word != "ping" and self.stopping_since is None:
            self.stopping_since = time.monotonic()
        try:
            self.chan.sendall(word.encode() + b"\n")
        except Exception:
            pass  # the channel is closed: the watchdog has gone or is stopping on EOF

    def poll(self):
        if self.code is None:
            if self.chan.exit_status_ready():
                rc = self.chan.recv_exit_status()
                # -1: the channel closed without an exit status: the host's sshd session went (killed, or the
                # host's network), not the node's own ending.
                self.code, self.lost = (255, True) if rc < 0 else (rc, False)
                if self.lost:
                    self.lost_why = (
                        f"the SSH session to {self.host} ended without the node's exit status (its "
                        f"sshd session was killed, or the host went off the network)"
                    )
            elif not self.conn.alive():
                self.code, self.lost = 255, True
                self.lost_why = f"the SSH connection to {self.host} closed"
            else:
                silent = self.conn.unanswered_for()
                bound = self.host_timeout if self.stopping_since is None else min(self.host_timeout, self.STOP_SILENCE)
                if silent > bound:
                    self.code, self.lost = 255, True
                    self.lost_why = f"no answer for {silent:.0f} s"
        return self.code

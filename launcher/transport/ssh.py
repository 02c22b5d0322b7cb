"""A paramiko connection to one host in use: commands, files, the watched sessions nodes run in, keepalives, and
closing them (connect.py opens them)."""

import logging
import posixpath
import threading
import time
from typing import Any

from launcher.transport.endpoint import Endpoint

log = logging.getLogger(__name__)

PUT_CHUNK = 1 << 20  # bytes per write of a file streamed to a host (put with a file object)
# How long closing a connection waits for its sessions to end by themselves (a login's rc files, a check).
SETTLE_SECONDS = 10.0


class Connection:
    def __init__(self, endpoint: Endpoint, client, jump=None):
        self.endpoint, self.client, self._jump = endpoint, client, jump
        self._sftp: Any = None  # paramiko's SFTPClient, opened on first use
        self._dirs: set[str] = set()  # directories known to exist on the host
        self._ahead: dict[str, list] = {}  # command -> sessions opened ahead of their use (open_ahead)
        self._sessions: list = []  # every long session opened (gates, nodes): close() lets them end first
        self._asked: float | None = None  # when the keepalive request still waiting for its answer was sent (watch())
        self._watching = False

    def run(self, command: str, timeout: float = 60.0, stdin: bytes = b"") -> tuple[int, str, str]:
        """Run shell text on the host and wait: (exit status, stdout, stderr)."""
        chan = self.client.get_transport().open_session(timeout=self.endpoint.timeout)
        chan.settimeout(timeout)
        log.debug("kit: debug: runs on %s: %s", self.endpoint.where, _shortened(command))
        chan.exec_command(command)
        if stdin:
            chan.sendall(stdin)
        chan.shutdown_write()
        out, err = chan.makefile("rb").read(), chan.makefile_stderr("rb").read()
        code = chan.recv_exit_status()
        chan.close()
        return code, out.decode(errors="replace"), err.decode(errors="replace")

    def open_ahead(self, command: str) -> None:
        """Open a session() of `command` now, for a later session(command): the host's login runs meanwhile."""
        chan = self._open_session(command)
        self._ahead.setdefault(command, []).append(chan)

    def session(self, command: str):
        """A channel running `command` with stderr merged into stdout; its stdin stays open for the caller."""
        ahead = self._ahead.get(command)
        return ahead.pop(0) if ahead else self._open_session(command)

    def _open_session(self, command: str):
        chan = self.client.get_transport().open_session(timeout=self.endpoint.timeout)
        self._sessions.append(chan)
        chan.set_combine_stderr(True)
        log.debug("kit: debug: starts on %s: %s", self.endpoint.where, _shortened(command))
        chan.exec_command(command)
        return chan

    def open_sftp(self) -> None:
        """Open the SFTP session that put() uses, ahead of the first put (say, while a command runs).
        transport.sftp.SftpUnavailable says why a host's SFTP does not start."""
        if self._sftp is None:
            from launcher.transport.sftp import start_sftp

            self._sftp = start_sftp(self.client.get_transport(), self.endpoint.timeout)

    def put(self, path: str, content, mode: int = 0o644) -> None:
        """Write a file on the host (parents created), via a temporary name so no reader sees half of it.
        `content`: text, bytes, or a binary file object, copied in chunks (memory stays bounded whatever its size)."""
        self.open_sftp()
        self._makedirs(posixpath.dirname(path))
        tmp = f"{path}.kit-tmp-{self.endpoint.name}"  # hosts sharing a filesystem may write the same file
        with self._sftp.open(tmp, "wb") as f:
            f.set_pipelined(True)  # paramiko's writes without a round trip each: the chunks stream
            if hasattr(content, "read"):
                for chunk in iter(lambda: content.read(PUT_CHUNK), b""):
                    f.write(chunk)
            else:
                f.write(content.encode() if isinstance(content, str) else content)
        self._sftp.chmod(tmp, mode)
        self._sftp.posix_rename(tmp, path)

    def listdir(self, path: str) -> list:
        """A directory's names on the host (OSError when it is not there); bounded like every wait on a host."""
        if not self.responsive():
            raise OSError(f"host {self.endpoint.name} does not answer")
        self.open_sftp()
        self._sftp.get_channel().settimeout(max(10.0, self.endpoint.timeout))
        return self._sftp.listdir(path)

    def _makedirs(self, path: str) -> None:
        """Like mkdir -p, from the deepest existing directory down: one round trip when it is there already,
        none for a directory this connection has seen (a fan-out pays every round trip once per host)."""
        if path in self._dirs or path in ("", ".", "/"):
            return
        try:
            self._sftp.stat(path)
        except IOError:
            self._makedirs(posixpath.dirname(path))
            try:
                self._sftp.mkdir(path)
            except IOError:
                self._sftp.stat(path)  # hosts sharing a filesystem race to create it: fine if it is there now
        self._dirs.add(path)

    def settle_sessions(self, timeout: float) -> None:
        settle_all([self], timeout)

    def watch(self, every: float) -> None:
        """Ask the host for an answer every `every` seconds (an SSH keepalive request: any answer, even "not
        supported", proves it is there), in a thread of its own, until the connection closes. A host that has
        gone off the network leaves the TCP connection "active" for minutes; unanswered_for() tells at once."""
        if self._watching:
            return
        self._watching = True
        threading.Thread(
            target=self._keepalive, args=(every,), daemon=True, name=f"kit-keepalive-{self.endpoint.name}"
        ).start()

    def _keepalive(self, every: float) -> None:
        transport = self.client.get_transport()
        while transport is not None and transport.is_active():
            self._asked = time.monotonic()
            try:
                transport.global_request("keepalive@openssh.com", wait=True)  # returns on any answer
            except Exception:
                return
            self._asked = None
            time.sleep(every)

    def unanswered_for(self) -> float:
        """Seconds the host has left the pending keepalive request unanswered (0 when none is pending)."""
        asked = self._asked
        return 0.0 if asked is None else time.monotonic() - asked

    def responsive(self, within: float = 2.0) -> bool:
        return self.alive() and self.unanswered_for() < within

    def running_sessions(self) -> list:
        """Sessions not ended yet, on a connection whose host still answers (a lost host's wait nothing)."""
        if not self.responsive():
            return []
        return [c for c in self._sessions if not c.closed and not c.exit_status_ready()]

    def alive(self) -> bool:
        t = self.client.get_transport()
        return t is not None and t.is_active()

    def close(self, settle: float = SETTLE_SECONDS) -> None:
        """Close the connection, first letting every session still running end by itself (settle_sessions)."""
        if settle > 0:
            self.settle_sessions(settle)
        for thing in (self._sftp, self.client, self._jump):
            try:
                if thing is not None:
                    thing.close()
            except Exception:
                pass


def _shortened(command: str, most: int = 300) -> str:
    """A command for a debug line: one line, its start (a boot script is kilobytes of Python)."""
    flat = " ".join(command.split())
    return flat if len(flat) <= most else f"{flat[:most]}... ({len(command)} characters)"


def settle_all(conns, timeout: float = SETTLE_SECONDS) -> None:
    """Let the sessions still running on `conns` end before the connections go: a login killed while the user's
    rc files run (pyenv's rehash in ~/.bashrc) can leave a lock that makes every later login of that user on that
    host wait a minute. Each gets a NUL (a gate still waiting for its check ends at it, having run nothing; a
    check waiting for `go` reads no `go`) and end of input; then up to `timeout` seconds for all of them (hosts in
    parallel) to exit."""
    waiting = [c for conn in conns for c in conn.running_sessions()]
    for chan in waiting:
        try:
            chan.sendall(b"\0")
            chan.shutdown_write()
        except Exception:  # closed meanwhile
            pass
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        waiting = [
            c
            for c in waiting
            if not c.closed
            and not c.exit_status_ready()
            and c.get_transport() is not None
            and c.get_transport().is_active()
        ]
        time.sleep(0.02)


def close_all(conns, settle: float = SETTLE_SECONDS) -> None:
    """Close connections, first letting their sessions end by themselves (settle_all), all hosts at once."""
    conns = list(conns)
    settle_all(conns, settle)
    for conn in conns:
        conn.close(settle=0)


def close_and_wait(conns, timeout: float = 5.0) -> None:
    """Close connections and wait for their paramiko threads to end. Before a fork: a thread inside OpenSSL at
    that moment (a key exchange, a cipher) would leave OpenSSL's lock held in the child, and the child's first
    SSH handshake would hang for good, holding the interpreter lock (seen in a sweep's trials)."""
    from launcher.transport import load_paramiko

    close_all(conns)
    # Ours, and any other closed one still ending (an early login the plan did not use).
    transport = load_paramiko().Transport
    ending = [t for t in threading.enumerate() if isinstance(t, transport) and not t.is_active()]
    deadline = time.monotonic() + timeout
    for t in ending:  # paramiko's read loop wakes every 0.1 s and sees the closed socket
        t.join(max(0.0, deadline - time.monotonic()))

"""One paramiko connection per host, opened in parallel; every connect bounded by ssh.connect_timeout."""

import posixpath
import socket
import sys
import threading
import time

from launcher.errors import KitError, per_line
from launcher.transport.endpoint import Endpoint
from launcher.transport.hostkeys import Accepted, changed_key_message, load_known_hosts, unknown_key_message


PUT_CHUNK = 1 << 20   # bytes per write of a file streamed to a host (put with a file object)
# How long closing a connection waits for its sessions to end by themselves (a login's rc files, a check).
SETTLE_SECONDS = 10.0


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Connection:
    def __init__(self, endpoint: Endpoint, client, jump=None):
        self.endpoint, self.client, self._jump = endpoint, client, jump
        self._sftp = None
        self._dirs = set()   # directories known to exist on the host
        self._ahead = {}     # command -> sessions opened ahead of their use (open_ahead)
        self._sessions = []  # every long session opened (gates, nodes): close() lets them end first
        self._asked = None   # monotonic time of the keepalive request still waiting for its answer (watch())
        self._watching = False

    def run(self, command: str, timeout: float = 60.0, stdin: bytes = b"") -> tuple[int, str, str]:
        """Run shell text on the host and wait: (exit status, stdout, stderr)."""
        chan = self.client.get_transport().open_session(timeout=self.endpoint.timeout)
        chan.settimeout(timeout)
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
            f.set_pipelined(True)   # paramiko's writes without a round trip each: the chunks stream
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
        threading.Thread(target=self._keepalive, args=(every,), daemon=True,
                         name=f"kit-keepalive-{self.endpoint.name}").start()

    def _keepalive(self, every: float) -> None:
        transport = self.client.get_transport()
        while transport is not None and transport.is_active():
            self._asked = time.monotonic()
            try:
                transport.global_request("keepalive@openssh.com", wait=True)   # returns on any answer
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
        except Exception:   # closed meanwhile
            pass
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        waiting = [c for c in waiting if not c.closed and not c.exit_status_ready()
                   and c.get_transport() is not None and c.get_transport().is_active()]
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
    for t in ending:   # paramiko's read loop wakes every 0.1 s and sees the closed socket
        t.join(max(0.0, deadline - time.monotonic()))


def _sock_via_jump(endpoint: Endpoint, accepted: Accepted):
    """ProxyJump: a direct-tcpip channel through the jump host (itself resolved through the same config)."""
    from launcher.transport.endpoint import resolve
    user, _, rest = endpoint.proxy_jump.rpartition("@")
    host, _, port = rest.partition(":")
    settings = {"config_file": endpoint.extra.get("config_file"), "connect_timeout": endpoint.timeout,
                "user": user or None, "port": int(port) if port else None, "port_given": bool(port),
                "accept_new_host_keys": endpoint.accept_new,
                "known_hosts": endpoint.known_hosts[0] if endpoint.known_hosts else None}
    jump = connect(resolve(host, None, settings), accepted)
    try:
        chan = jump.client.get_transport().open_channel(
            "direct-tcpip", (endpoint.hostname, endpoint.port), ("127.0.0.1", 0), timeout=endpoint.timeout)
    except Exception as e:
        jump.close()
        raise KitError(f"{endpoint.where}: the jump host {host} could not reach it: {e}") from None
    return jump, chan


class _QuickAckSocket(socket.socket):
    """A TCP socket that acknowledges what it receives at once. sshd writes some messages back to back (after
    the login, a host-keys notice, then the reply to our first channel open); under Nagle's algorithm on the
    host, the second waits until the first is acknowledged, and Linux delays that acknowledgement (~40 ms)
    unless asked not to after each read (TCP_QUICKACK does not stay set)."""

    def recv(self, *args):
        data = super().recv(*args)
        try:
            self.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        except OSError:   # a speed-up only: never a reason for the connection to fail
            pass
        return data


def tcp_connect(endpoint: Endpoint):
    """The TCP connection to a host without a jump host, for connect(sock=...): opened before paramiko is
    loaded, the host's sshd starts up meanwhile. A socket, or the line saying why there is none."""
    try:
        sock = socket.create_connection((endpoint.hostname, endpoint.port), timeout=endpoint.timeout)
    except OSError as e:
        return _explain(endpoint, e)
    # SSH is small requests each waiting for its reply (key exchange, auth, channel open, exec): under Nagle's
    # algorithm each such packet can wait for the host's delayed ACK, ~40 ms on Linux. Measured on the test
    # hosts: handshake and login 65 ms -> 18 ms, a channel's open and exec 45 ms -> 1 ms.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if hasattr(socket, "TCP_QUICKACK"):   # Linux
        sock = _QuickAckSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
    return sock


def connect(endpoint: Endpoint, accepted: Accepted, sock=None) -> Connection:
    """Connect and authenticate (on `sock`, a tcp_connect() socket, if given), or raise KitError with one line
    naming the host."""
    from launcher.transport import load_paramiko
    paramiko = load_paramiko()
    client = paramiko.SSHClient()
    load_known_hosts(client, endpoint)
    client.set_missing_host_key_policy(accepted.policy(endpoint, _note) if endpoint.accept_new
                                       else paramiko.RejectPolicy())
    if endpoint.proxy_jump:
        jump, sock = _sock_via_jump(endpoint, accepted)
    else:
        jump, sock = None, sock or tcp_connect(endpoint)
        if isinstance(sock, str):
            raise KitError(sock)
    t = endpoint.timeout
    try:
        client.connect(endpoint.hostname, port=endpoint.port, username=endpoint.user, sock=sock,
                       key_filename=list(endpoint.identity_files) or None, allow_agent=True,
                       look_for_keys=not endpoint.identity_files, timeout=t, banner_timeout=t, auth_timeout=t,
                       channel_timeout=t)
    except Exception as e:
        client.close()
        for thing in (jump, sock):
            if thing is not None:
                thing.close()
        raise KitError(_explain(endpoint, e)) from None
    return Connection(endpoint, client, jump)


def _explain(endpoint: Endpoint, e: Exception) -> str:
    from launcher.transport import load_paramiko
    paramiko = load_paramiko()
    if isinstance(e, paramiko.BadHostKeyException):
        return changed_key_message(endpoint)
    if isinstance(e, paramiko.PasswordRequiredException):   # an AuthenticationException: before it
        keys = ", ".join(endpoint.identity_files) or "a key of ~/.ssh"
        return (f"{endpoint.where}: {keys} is encrypted and no ssh-agent offered a key that works; add it to your "
                f"agent first (`ssh-add KEY`): kit never asks for a passphrase")
    if isinstance(e, paramiko.AuthenticationException):
        keys = ", ".join(endpoint.identity_files) or "the agent and ~/.ssh/id_*"
        return f"{endpoint.where}: authentication failed as {endpoint.user} (tried {keys})"
    if isinstance(e, (socket.timeout, TimeoutError)) or "timed out" in str(e).lower():
        return (f"{endpoint.where}: no answer within {endpoint.timeout:g} s (ssh.connect_timeout); "
                f"is it up and reachable from here?")
    if isinstance(e, paramiko.SSHException) and "known_hosts" in str(e):
        return unknown_key_message(endpoint)
    if isinstance(e, OSError):
        return f"{endpoint.where}: cannot connect: {e.strerror or e}"
    return f"{endpoint.where}: ssh failed: {e}"


def connect_all(endpoints: list[Endpoint], accepted: Accepted) -> dict[str, Connection]:
    """Every host at once; if any fails, close the others and raise one line per failing host."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(64, max(1, len(endpoints)))) as pool:
        futures = {e.name: pool.submit(try_connect, e, accepted) for e in endpoints}
        results = {name: f.result() for name, f in futures.items()}
    errors = [r for r in results.values() if isinstance(r, str)]
    if errors:
        for r in results.values():
            if isinstance(r, Connection):
                r.close()
        raise per_line(errors)  # one line per host, each like a single error
    return results


def connect_each(endpoints: list[Endpoint], accepted: Accepted, then, early=None) -> tuple[dict, dict, list]:
    """Every host at once, each going on to `then(conn)` in its thread as soon as it is connected: its remote
    work starts while other hosts still shake hands. `then` must not raise. `early(endpoint)`, if given, is a
    connection already opened to exactly that endpoint (or the line saying why it failed), or None. Returns
    ({name: Connection}, {name: what `then` returned}, [one line per host that could not be reached]); the
    caller closes them."""
    from concurrent.futures import ThreadPoolExecutor   # not on the early logins' way to their TCP connect
    def one(endpoint):
        conn = early(endpoint) if early is not None else None
        conn = try_connect(endpoint, accepted) if conn is None else conn
        return (conn, then(conn)) if isinstance(conn, Connection) else (conn, None)

    with ThreadPoolExecutor(max_workers=min(64, max(1, len(endpoints)))) as pool:
        futures = {e.name: pool.submit(one, e) for e in endpoints}
        done = {name: f.result() for name, f in futures.items()}
    conns = {name: c for name, (c, _) in done.items() if isinstance(c, Connection)}
    return conns, {name: r for name, (c, r) in done.items() if name in conns}, \
        [c for c, _ in done.values() if isinstance(c, str)]


def try_connect(endpoint: Endpoint, accepted: Accepted, sock=None):
    """A Connection, or the one line saying why there is none."""
    try:
        return connect(endpoint, accepted, sock)
    except KitError as e:
        return str(e)

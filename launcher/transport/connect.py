"""Opening connections: one paramiko connection per host, in parallel, host keys checked; every connect bounded by
ssh.connect_timeout, and a failure one line naming the host."""

import logging
import socket

from launcher.errors import KitError, per_line
from launcher.transport.endpoint import Endpoint
from launcher.transport.hostkeys import Accepted, changed_key_message, load_known_hosts, unknown_key_message
from launcher.transport.ssh import Connection

log = logging.getLogger(__name__)


def _sock_via_jump(endpoint: Endpoint, accepted: Accepted):
    """ProxyJump: a direct-tcpip channel through the jump host (itself resolved through the same config)."""
    from launcher.transport.endpoint import resolve

    assert endpoint.proxy_jump is not None  # called only for an endpoint that has one (connect, below)
    user, _, rest = endpoint.proxy_jump.rpartition("@")
    host, _, port = rest.partition(":")
    settings = {
        "config_file": endpoint.extra.get("config_file"),
        "connect_timeout": endpoint.timeout,
        "user": user or None,
        "port": int(port) if port else None,
        "port_given": bool(port),
        "accept_new_host_keys": endpoint.accept_new,
        "known_hosts": endpoint.known_hosts[0] if endpoint.known_hosts else None,
    }
    jump = connect(resolve(host, None, settings), accepted)
    try:
        chan = jump.client.get_transport().open_channel(
            "direct-tcpip", (endpoint.hostname, endpoint.port), ("127.0.0.1", 0), timeout=endpoint.timeout
        )
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
        except OSError:  # a speed-up only: never a reason for the connection to fail
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
    if hasattr(socket, "TCP_QUICKACK"):  # Linux
        sock = _QuickAckSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
    return sock


def connect(endpoint: Endpoint, accepted: Accepted, sock=None) -> Connection:
    """Connect and authenticate (on `sock`, a tcp_connect() socket, if given), or raise KitError with one line
    naming the host."""
    from launcher.transport import load_paramiko

    paramiko = load_paramiko()
    client = paramiko.SSHClient()
    load_known_hosts(client, endpoint)
    client.set_missing_host_key_policy(accepted.policy(endpoint) if endpoint.accept_new else paramiko.RejectPolicy())
    if endpoint.proxy_jump:
        jump, sock = _sock_via_jump(endpoint, accepted)
    else:
        jump, sock = None, sock or tcp_connect(endpoint)
        if isinstance(sock, str):
            raise KitError(sock)
    t = endpoint.timeout
    log.debug("kit: debug: ssh: logging in to %s as %s", endpoint.where, endpoint.user)
    try:
        client.connect(
            endpoint.hostname,
            port=endpoint.port,
            username=endpoint.user,
            sock=sock,
            key_filename=list(endpoint.identity_files) or None,
            allow_agent=True,
            look_for_keys=not endpoint.identity_files,
            timeout=t,
            banner_timeout=t,
            auth_timeout=t,
            channel_timeout=t,
        )
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
    if isinstance(e, paramiko.PasswordRequiredException):  # an AuthenticationException: before it
        keys = ", ".join(endpoint.identity_files) or "a key of ~/.ssh"
        return (
            f"{endpoint.where}: {keys} is encrypted and no ssh-agent offered a key that works; add it to your "
            f"agent first (`ssh-add KEY`): kit never asks for a passphrase"
        )
    if isinstance(e, paramiko.AuthenticationException):
        keys = ", ".join(endpoint.identity_files) or "the agent and ~/.ssh/id_*"
        return f"{endpoint.where}: authentication failed as {endpoint.user} (tried {keys})"
    if isinstance(e, (socket.timeout, TimeoutError)) or "timed out" in str(e).lower():
        return (
            f"{endpoint.where}: no answer within {endpoint.timeout:g} s (ssh.connect_timeout); "
            f"is it up and reachable from here?"
        )
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
    from concurrent.futures import ThreadPoolExecutor  # not on the early logins' way to their TCP connect

    def one(endpoint):
        conn = early(endpoint) if early is not None else None
        conn = try_connect(endpoint, accepted) if conn is None else conn
        return (conn, then(conn)) if isinstance(conn, Connection) else (conn, None)

    with ThreadPoolExecutor(max_workers=min(64, max(1, len(endpoints)))) as pool:
        futures = {e.name: pool.submit(one, e) for e in endpoints}
        done = {name: f.result() for name, f in futures.items()}
    conns = {name: c for name, (c, _) in done.items() if isinstance(c, Connection)}
    return (
        conns,
        {name: r for name, (c, r) in done.items() if name in conns},
        [c for c, _ in done.values() if isinstance(c, str)],
    )


def try_connect(endpoint: Endpoint, accepted: Accepted, sock=None):
    """A Connection, or the one line saying why there is none."""
    try:
        return connect(endpoint, accepted, sock)
    except KitError as e:
        return str(e)

"""Log in to an SSH cluster's hosts while kit is still starting: on a small fan-out, kit's own start-up (paramiko,
and the schemas and plan in the forked planner, commands/planner.py) and each host's login (sshd, the login
shell's rc files) are most of the time to start, and they can overlap.

`early_guess(request, cluster)` reads the job and cluster files as plain YAML (kit's process never loads the
schemas for such a run), and `log_in_early(guess)` connects to the hosts the job will use in background threads
(host keys checked as always) and opens each one's launch channel, whose gate waits for its program on stdin
(gate.py). Nothing of the job starts: the check program is sent only once the plan is built and validated, and go
only after every host passed its checks. The backend then takes a login only if its endpoint is exactly the one the
validated config resolves to; anything else is closed and the backend connects as it would have. A guess that
misses (an unusual config, overrides) only costs the early work.
"""

import sys
import threading

from launcher.backends.warmup import read_yaml

_early = None  # this process's early logins, until the SSH backend claims them
# While the logins run: their threads mostly wait on the hosts, and when an answer comes each should not wait long
# for the interpreter lock that kit's start-up holds (5 ms a turn by default; a handshake takes many turns).
SWITCH_INTERVAL = 0.0005


class EarlyLogins:
    def __init__(self, endpoints):
        # What the threads run is imported here, first: a thread importing kit's modules while the main thread
        # imports others (the backend, paramiko) can deadlock on their package locks (_DeadlockError, seen).
        from launcher.backends.ssh.gate import GATE_COMMAND
        from launcher.transport import connect, ssh
        from launcher.transport.hostkeys import Accepted

        self._ssh, self._connect, self._gate_command = ssh, connect, GATE_COMMAND
        self.accepted = Accepted()
        self.switch_interval = sys.getswitchinterval()  # restored when the backend claims the logins
        sys.setswitchinterval(SWITCH_INTERVAL)
        self._logins = {}  # host name -> (Endpoint, Connection or the line saying why none)
        self._threads = {e.name: threading.Thread(target=self._one, args=(e,), daemon=True) for e in endpoints}
        for t in self._threads.values():
            t.start()

    def _one(self, endpoint) -> None:
        ssh, connect = self._ssh, self._connect
        try:
            sock = None if endpoint.proxy_jump else connect.tcp_connect(endpoint)  # the host's sshd starts meanwhile
            conn = sock if isinstance(sock, str) else connect.try_connect(endpoint, self.accepted, sock)
        except Exception:  # a guess that fails in a way a login should not (a setting the schema refuses): no
            conn = None  # early login, and no traceback from this thread; the normal path says what is wrong
        if isinstance(conn, ssh.Connection):
            try:
                conn.open_ahead(self._gate_command)
            except Exception:  # the backend opens it again and reports what goes wrong
                pass
        self._logins[endpoint.name] = (endpoint, conn)

    def take(self, endpoint):
        """The connection (or failure line) opened early to exactly this endpoint, or None."""
        if endpoint.name in self._threads:
            self._threads[endpoint.name].join()
        early, conn = self._logins.pop(endpoint.name, (None, None))
        if early == endpoint:
            return conn
        if conn is not None and not isinstance(conn, str):
            conn.close()
        return None

    def close(self) -> None:
        for t in self._threads.values():
            t.join()
        self._ssh.close_all(conn for _, conn in self._logins.values() if isinstance(conn, self._ssh.Connection))
        self._logins = {}


def _endpoints(cluster: dict, nodes: int) -> list:
    """The endpoints of the first `nodes` hosts of the cluster file's data, as the validated config would
    resolve them."""
    from launcher.transport.endpoint import resolve

    ssh = cluster.get("ssh") or {}
    settings = {**ssh, "port_given": "port" in ssh}  # resolve() applies the schema's defaults
    hosts = [{"name": h} if isinstance(h, str) else h for h in cluster["hosts"]][:nodes]
    return [resolve(h["name"], h.get("address"), settings) for h in hosts]


def early_guess(request, cluster: dict):
    """(the cluster file's data, how many hosts the job uses) when kit should log in to them early: an SSH
    cluster whose connection settings the command line leaves alone, for one run (a sweep connects per trial).
    None otherwise, or when the files are not what this guess understands (their load says what is wrong).
    `request`: the submission (core/request.py); `cluster`: its cluster file's data, as plain YAML."""
    if request.sweep or any(s.startswith(("cluster.", "sweep")) for s in request.sets):
        return None
    try:
        # A job built from the command line (a script, -m MODULE) has only the flags' fields.
        built = request.module is not None or request.job.endswith(".py")
        job = {} if built else read_yaml(request.job)
        ssh = cluster.get("ssh") or {}
        if cluster.get("backend") != "ssh" or ssh.get("accept_new_host_keys") or "sweep" in job:
            return None  # accepting new keys is reported with the run: keep it where the run's record is made
        if not _timeouts_usable(ssh):
            return None  # the schema refuses them, in one line, before any login
        nodes = request.nodes if request.nodes is not None else job.get("nodes", 1)
        return cluster, nodes if isinstance(nodes, int) else 0
    except Exception:
        return None


def _timeouts_usable(ssh: dict) -> bool:
    """The connection timeouts of the raw `ssh:` section are what a socket takes: finite positive numbers (an
    `.inf` or `.nan` would raise in the login threads, before the schema refuses it)."""
    import math

    for key in ("connect_timeout", "host_timeout"):
        value = ssh.get(key, 1.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            return False
    return True


def log_in_early(guess) -> None:
    """Start logging in to the hosts of early_guess() in the background (none if it was None)."""
    global _early
    try:
        endpoints = _endpoints(*guess) if guess is not None else []
    except Exception:  # not a config this guess understands: the normal load reports any mistake
        return
    if endpoints:
        _early = EarlyLogins(endpoints)  # first the TCP connections, while paramiko loads
        # paramiko next, here: the logins wait for it, and nothing else should share the interpreter meanwhile.
        from launcher.transport import load_paramiko

        load_paramiko()


def claim():
    """This process's early logins (once), or None."""
    global _early
    early, _early = _early, None
    if early is not None:
        sys.setswitchinterval(early.switch_interval)
    return early


def close_early() -> None:
    """Close the early logins nothing claimed (a submission that turned out to be a sweep, which connects per
    trial)."""
    early = claim()
    if early is not None:
        early.close()

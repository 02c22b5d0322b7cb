"""`kit status` / `kit cancel` of an SSH run: its supervisor (kit) if alive, else the remote watchdogs, found by
the pid and start time the record keeps, so nothing but this run's processes is ever signalled. Every value taken
from the record into shell text is typed by status.py (pids are integers, start ticks digits, hosts host names)."""

import shlex
import time

from launcher.errors import KitError
from launcher.trust import require_trusted
from launcher.status import ACTIVE, NodeStatus, RunStatus
from launcher.supervise import liveness
from launcher.supervise.liveness import CANCEL_MARGIN, stop_supervisor
from launcher.backends.ssh.node import STARTTIME
from launcher.states import RunState


def _nodes_by_host(status: RunStatus) -> dict:
    by_host: dict[str, list[NodeStatus]] = {}
    for node in status.nodes:
        if node.pid and node.start_ticks:  # a pid without its start time could be anyone's by now
            by_host.setdefault(node.host, []).append(node)
    return by_host


def _guarded(node: NodeStatus, action: str) -> str:
    """Shell text that runs `action` only if the pid still is the watchdog recorded (same start time)."""
    assert node.pid is not None  # _nodes_by_host keeps only the nodes with a pid
    pid = int(node.pid)
    ticks = shlex.quote(str(node.start_ticks or ""))
    return f'[ "$({STARTTIME.format(pid=pid)} 2>/dev/null)" = {ticks} ] && {action}'


def record_settings(record, status: RunStatus) -> dict:
    """The connection settings a record holds, for logging in again (status, cancel): only from a record that is
    yours and writable by nobody else, and never accepting a new host key (that opt-in was the submission's)."""
    require_trusted(record)
    return {**(status.handle.ssh or {}), "accept_new_host_keys": False}


def _on_hosts(record, status: RunStatus, action: str) -> tuple[dict, list]:
    """Run the guarded action for every recorded node, hosts in parallel: ({host: [ranks matched]}, errors)."""
    from concurrent.futures import ThreadPoolExecutor
    from launcher.transport.endpoint import resolve
    from launcher.transport.hostkeys import Accepted
    from launcher.transport.connect import connect

    settings = record_settings(record, status)

    def one(item):
        host, nodes = item
        conn = connect(resolve(host, nodes[0].address, settings), Accepted())
        try:
            text = "; ".join(_guarded(n, action.format(pid=int(n.pid)) + f" && echo {int(n.rank)}") for n in nodes)
            _, out, _ = conn.run(text + "; true", timeout=60)
            return [int(w) for w in out.split() if w.isdigit()]
        finally:
            conn.close()

    found, errors = {}, []
    with ThreadPoolExecutor(max_workers=8) as pool:
        items = list(_nodes_by_host(status).items())
        for (host, _), fut in zip(items, [pool.submit(one, it) for it in items]):
            try:
                found[host] = fut.result()
            except KitError as e:
                errors.append(str(e))
    return found, errors


def remote_alive(record, status: RunStatus) -> tuple[int, list]:
    found, errors = _on_hosts(record, status, "true")
    return sum(len(v) for v in found.values()), errors


def current_state(record, status: RunStatus) -> tuple[str, str]:
    state = status.state
    if state not in ACTIVE or not status.supervisor_pid:
        return state, status.note
    if liveness.supervisor(status) is not None:
        return state, ""
    # Only when the supervisor is gone do we ask the hosts (a login costs ~0.5 s).
    left, errors = remote_alive(record, status)
    why = f"; could not check: {'; '.join(errors)}" if errors else ""
    boss = f"its supervisor (kit, pid {status.supervisor_pid})"
    if left:
        return RunState.LOST, f"{boss} is gone; {left} node(s) still stopping{why}"
    return RunState.LOST, f"{boss} died before recording the outcome{why}"


def cancel_ssh_run(record, status: RunStatus) -> str:
    require_trusted(record)  # before its supervisor pid is signalled, not only before the logins
    run_id = status.run_id or "?"
    grace = stop_supervisor(status, " on every host")  # the supervisor stops every node through its channels
    _, errors = _on_hosts(record, status, "kill -TERM {pid}")  # the watchdog stops its node, with the grace
    deadline = time.monotonic() + grace + CANCEL_MARGIN
    while time.monotonic() < deadline and remote_alive(record, status)[0]:
        time.sleep(1.0)
    left, more = remote_alive(record, status)
    if left:
        _on_hosts(record, status, "kill -KILL -- -{pid}")
    if record.read_status().state in ACTIVE:
        record.update_status(state=RunState.CANCELLED, finished_at=time.time())
    if errors or more:
        return f"run {run_id}: cancelled, but some hosts could not be checked: {'; '.join(errors + more)}"
    return f"run {run_id}: cancelled; no process of it is left on any host"

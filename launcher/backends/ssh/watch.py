"""What kit asks an SSH run's hosts while it goes on: an answer from every host and a word to every watchdog
(keep_in_touch), the master's reach from a node, every rank's stack, and the failing rank's teed stderr."""

import os
import posixpath
import shlex
import threading
from concurrent.futures import ThreadPoolExecutor

from launcher.planning.model import LaunchPlan, NodePlan
from launcher.preflight.reach import reach_command, reach_problem
from launcher.preflight.stacks import dump_command, parse_dumps
from launcher.records import RunRecord

RANK_LOG_BYTES = 64 * 1024
HOST_TIMEOUT = 30.0  # ssh.host_timeout's default
REACH_TIMEOUT = 30.0
PING_EVERY = 5.0


def fetch_rank_stderr(conn, plan: LaunchPlan, node: NodePlan, record: RunRecord, timeout: float = 10.0) -> None:
    """Copy the tail of each rank's teed stderr (`<run dir>/node<R>.ranks/*/attempt_*/<local rank>/stderr.log` under
    the node's workdir on its host) into the record's node<R>.ranks, where the failure summary reads it. Best
    effort, bounded: a host that is gone leaves the summary to the node log."""
    if conn is None or not conn.alive():
        return
    remote = posixpath.join(node.workdir, plan.run_dir, f"node{node.machine_rank}.ranks")
    local = record.file(f"node{node.machine_rank}.ranks")
    try:
        sftp = conn.client.open_sftp()
        sftp.get_channel().settimeout(timeout)
        try:
            for run in sftp.listdir(remote)[:8]:
                for attempt in sftp.listdir(posixpath.join(remote, run))[:8]:
                    for rank in sftp.listdir(posixpath.join(remote, run, attempt))[:64]:
                        rel = (run, attempt, rank, "stderr.log")
                        target = os.path.join(local, *rel)
                        if os.path.exists(target):  # the record and the host's workdir are one directory
                            continue
                        with sftp.open(posixpath.join(remote, *rel), "rb") as f:
                            size = f.stat().st_size
                            f.seek(max(0, size - RANK_LOG_BYTES))
                            data = f.read(RANK_LOG_BYTES)
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with open(target, "wb") as out:
                            out.write(data)
        finally:
            sftp.close()
    except Exception:  # IOError, paramiko's SSHException, a timeout: the summary falls back to the node log
        pass


def keep_in_touch(conns: dict, nodes, settings: dict) -> threading.Event:
    """Every host is asked for an answer (keepalive requests: a silent one is lost after ssh.host_timeout), and
    every node's watchdog hears from kit (`ping`: one that hears nothing for twice as long stops its node),
    until the returned event is set."""
    timeout = float(settings.get("host_timeout") or HOST_TIMEOUT)
    every = min(PING_EVERY, timeout / 3)
    for conn in conns.values():
        conn.watch(every)
    for node in nodes:
        node.host_timeout = timeout
    done = threading.Event()

    def ping():
        while not done.wait(every):
            for node in nodes:
                if node.code is None:
                    node.send("ping")

    threading.Thread(target=ping, daemon=True, name="kit-ping").start()
    return done


def reach(conns: dict, plan: LaunchPlan, node: NodePlan):
    """The master checked from the node's host, as its launcher dials it (after the node's setup lines)."""
    conn = conns[node.host]
    if not conn.responsive():
        return f"its host {node.host} does not answer"
    code, out, err = conn.run("bash --norc -c " + shlex.quote(reach_command(plan, node)), timeout=REACH_TIMEOUT)
    return reach_problem(out + err, plan.world.master_addr, plan.world.master_port)


def stacks(conns: dict, plan: LaunchPlan) -> dict:
    """Every rank's stack, taken on each host (its nodes' ranks at once), hosts in parallel."""
    first: dict[str, NodePlan] = {}
    for node in plan.nodes:
        first.setdefault(node.host, node)

    def one(node):
        conn = conns[node.host]
        if not conn.responsive():
            return {}
        _, out, _ = conn.run("bash --norc -c " + shlex.quote(dump_command(plan, node)), timeout=120)
        return parse_dumps(out)

    stacks = {}
    with ThreadPoolExecutor(max_workers=max(1, min(32, len(first)))) as pool:
        for found in pool.map(one, first.values()):
            stacks.update(found)
    return stacks

"""An SSH run's failure in one line, from the node logs streamed here and the ranks' teed stderr fetched from the
hosts: a lost host says so; otherwise the first node that failed by itself, unless its ranks only died of another
node's rank's error (tracebacks.first_cause)."""

import posixpath
import shlex
from typing import Optional

from launcher.status import LOST, Failure
from launcher.supervise.disk import FULL_BELOW, full_note
from launcher.supervise.failure import explained_elsewhere, known_codes, read_log, summarize
from launcher.supervise.tracebacks import first_cause


def run_failure(plan, record, outcome, nodes):
    if nodes[outcome.first_failed].lost:
        node = plan.nodes[outcome.first_failed]
        return Failure(
            node.machine_rank,
            node.host,
            None,
            outcome.node_codes[outcome.first_failed],
            LOST,
            nodes[outcome.first_failed].lost_why,
        )
    logs = [read_log(record.file(posixpath.basename(n.log))) for n in plan.nodes]  # read once, for every node
    ended = [i for i in outcome.failed_nodes or (outcome.first_failed,) if not nodes[i].lost]
    return first_cause([_node_failure(plan, record, outcome, logs, i) for i in ended])


def _node_failure(plan, record, outcome, logs: list, i: int) -> Failure:
    node = plan.nodes[i]
    known = known_codes(node.argv)
    ranks_dir = record.file(f"node{node.machine_rank}.ranks")
    return explained_elsewhere(
        summarize(
            node.machine_rank,
            node.host,
            outcome.node_codes[i],
            logs[i],
            known,
            ranks_dir=ranks_dir,
            procs_per_node=plan.world.procs_per_node,
        ),
        known,
        logs,
    )


# A full disk on a host: its ranks' teed output files there cannot be written, so what a failing rank said last may
# be lost or cut mid-line. Asked of the host after a failure, it is said in the failure line.


def host_disk_note(conn, host: str, workdir: str, timeout: float = 10.0) -> Optional[str]:
    """The note for the failure when `workdir`'s disk on the host is full now, else None (also when the host
    cannot be asked)."""
    if conn is None or not conn.alive():
        return None
    try:
        code, out, _ = conn.run(
            f"df -Pk -- {shlex.quote(workdir)} 2>/dev/null | awk 'NR==2 {{print $4}}'", timeout=timeout
        )
    except Exception:  # paramiko's errors, a timeout: nothing to add
        return None
    free = out.strip()
    if code != 0 or not free.isdigit() or int(free) * 1024 >= FULL_BELOW:
        return None
    return full_note(f"{host}:{workdir}", int(free) * 1024)


__all__ = ["run_failure", "host_disk_note"]

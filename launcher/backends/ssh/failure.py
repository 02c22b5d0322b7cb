"""An SSH run's failure in one line, from the node logs streamed here and the ranks' teed stderr fetched from the
hosts: a lost host says so; otherwise the first node that failed by itself, unless its ranks only died of another
node's rank's error (tracebacks.first_cause)."""

import posixpath

from launcher.status import LOST, Failure
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


__all__ = ["run_failure"]

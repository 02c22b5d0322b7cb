"""Run a plan on this machine: one watchdog-supervised process tree per (simulated) node, torn down together."""

import os
import sys
import time

from launcher.errors import KitError
from launcher.plan.model import LaunchPlan
from launcher.runs import RunRecord
from launcher.backends.environment import node_process_env
from launcher.supervise import liveness, tree
from launcher.supervise.cancel import cancel_local_run
from launcher.supervise.console import Console, follow_node
from launcher.supervise.failure import known_codes, read_log, summarize
from launcher.supervise.local_node import LocalNode
from launcher.supervise.supervisor import Cancel, finalize, supervise
from launcher.supervise.watchdog import become_subreaper


def _grace(plan: LaunchPlan) -> float:
    return plan.teardown_grace


class LocalBackend:
    name = "local"

    def check(self, plan: LaunchPlan) -> None:
        """Fail before anything starts (kit submit then takes back the record it wrote)."""
        for node in plan.nodes:
            node_process_env(plan, node, dict(os.environ))

    def execute(self, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None) -> int:
        console = console or Console(sys.stdout, sys.stderr)
        # Orphans of a node (a rank whose watchdog died) are re-parented to us, never to init, so the final
        # sweep below still finds them.
        become_subreaper()
        envs = [node_process_env(plan, n, dict(os.environ)) for n in plan.nodes]
        with Cancel(on_hangup=console.hang_up) as cancel:
            nodes, threads = self._start(plan, envs, base_dir, console)
            record.update_status(state="running", started_at=time.time(), supervisor_pid=os.getpid(),
                                 supervisor_start=tree.same_process(os.getpid(), None).create_time(),
                                 teardown_grace=_grace(plan), nodes=[n.record() for n in nodes])
            outcome = supervise(nodes, cancel, on_stop=lambda: console.note(
                f"kit: stopping run {plan.run_id}: SIGTERM to every process, SIGKILL after {_grace(plan):.0f} s"
                " (Ctrl-C again to shorten)"))
            for t in threads:
                t.join(timeout=10)
            leftovers = tree.live_descendants()
            if leftovers:
                tree.terminate(leftovers, grace=_grace(plan))
        failure = None
        if outcome.first_failed is not None:
            node = plan.nodes[outcome.first_failed]
            failure = summarize(node.machine_rank, node.host, outcome.node_codes[outcome.first_failed],
                                read_log(os.path.join(base_dir, node.workdir, node.log)), known_codes(node.argv),
                                ranks_dir=os.path.join(base_dir, node.workdir, plan.run_dir,
                                                       f"node{node.machine_rank}.ranks"),
                                procs_per_node=plan.world.procs_per_node)
        outcome = finalize(outcome, failure)
        record.update_status(state=outcome.state, exit_code=outcome.code, finished_at=time.time(),
                             node_exit_codes=outcome.node_codes,
                             failure=None if failure is None else failure.__dict__)
        return outcome.code, outcome.state, failure

    def current_state(self, status: dict) -> tuple[str, str]:
        return liveness.current_state(status)

    def cancel(self, record: RunRecord, status: dict) -> str:
        return cancel_local_run(record, status)

    def _start(self, plan: LaunchPlan, envs, base_dir: str, console: Console):
        nodes, threads = [], []
        try:
            for node, env in zip(plan.nodes, envs):
                log = os.path.join(base_dir, node.workdir, node.log)
                handle = LocalNode.start(node.machine_rank, node.host, node.command, env=env, cwd=base_dir,
                                         log=log, grace=_grace(plan))
                nodes.append(handle)
                threads.append(follow_node(handle.output_fd(), node.machine_rank, console))
        except OSError as e:
            for handle in nodes:
                handle.send("kill")
            raise KitError(f"could not start node {len(nodes)} on this machine: {e}") from None
        return nodes, threads



"""Run a plan on this machine: one watchdog-supervised process tree per (simulated) node, torn down together."""

import os
import subprocess
import sys
import time

from launcher.backends.base import Backend, Result
from launcher.backends.local.cancel import cancel_local_run, current_state
from launcher.backends.local.node import LocalNode, launcher_running
from launcher.backends.local.preflight import preflight, run_bounded
from launcher.environment import node_process_env
from launcher.errors import KitError
from launcher.insight.watch import InsightWatch
from launcher.planning.model import LaunchPlan
from launcher.preflight.reach import reach_command, reach_problem
from launcher.preflight.stacks import dump_command, parse_dumps
from launcher.records import RunRecord
from launcher.states import AttemptEnd, RunState
from launcher.status import RunStatus
from launcher.supervise import tree
from launcher.supervise.console import Console, follow_node
from launcher.supervise.disk import full_disk_note, with_full_disk
from launcher.supervise.failure import known_codes, read_log, summarize
from launcher.supervise.hang import HangWatch
from launcher.supervise.supervisor import Cancel, finalize, supervise
from launcher.supervise.tracebacks import first_cause
from launcher.supervise.watchdog import become_subreaper
from launcher.supervise.world import WorldWatch, ranks_started

REACH_TIMEOUT = 30.0  # the node's setup lines, then a connect bounded by reach.CONNECT_SECONDS


class LocalBackend(Backend):
    name = "local"

    def check(self, plan: LaunchPlan, base_dir: str) -> None:
        """The nodes' environment (secrets there), then the preflight: setup lines, entrypoint, master port."""
        for node in plan.nodes:
            node_process_env(plan, node, dict(os.environ))
        if self.binding is not None:
            preflight(plan, self.binding["entrypoint"], self.binding["workdir"], base_dir)

    def execute(self, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None) -> Result:
        console = console or Console(sys.stdout, run_id=plan.run_id)
        grace = plan.teardown_grace
        # Orphans of a node (a rank whose watchdog died) are re-parented to us, never to init, so the final
        # sweep below still finds them.
        become_subreaper()
        envs = [node_process_env(plan, n, dict(os.environ)) for n in plan.nodes]
        with Cancel(on_hangup=console.hang_up) as cancel:
            nodes, threads = self._start(plan, envs, base_dir, console, record)
            record.update_status(
                state=RunState.RUNNING,
                started_at=time.time(),
                supervisor_pid=os.getpid(),
                supervisor_start=tree.started_at(os.getpid()),
                teardown_grace=grace,
                nodes=[n.record() for n in nodes],
            )
            watch = WorldWatch(
                plan,
                lambda n: ranks_started(os.path.join(base_dir, n.workdir), plan.run_dir, n),
                lambda n: self._reach(plan, n, base_dir, envs[n.machine_rank]),
                launched=lambda n: launcher_running(nodes[n.machine_rank].proc.pid, n.argv),
            )
            hang = HangWatch(
                plan, watch, lambda: console.rank_output_at, lambda: self._stacks(plan, base_dir, envs[0]), record.path
            )
            outcome = supervise(
                nodes,
                cancel,
                on_stop=lambda: console.note(
                    f"kit: stopping run {plan.run_id}: SIGTERM to every process, SIGKILL after {grace:.0f} s"
                    " (a Ctrl-C shortens the wait)"
                ),
                watches=[watch, hang, InsightWatch(plan, record, watch, console.warn)],
            )
            for t in threads:
                t.join(timeout=10)
            leftovers = tree.live_descendants()
            if leftovers:
                tree.terminate(leftovers, grace=grace)
        failure = outcome.failure
        if outcome.first_failed is not None:
            # A node whose ranks only died of another node's rank's error may end first (tracebacks.first_cause).
            failure = first_cause(
                [_node_failure(plan, base_dir, outcome, i) for i in outcome.failed_nodes or (outcome.first_failed,)]
            )
            # A full disk under the run directory is the cause; what the ranks wrote last there may be cut.
            failure = with_full_disk(failure, full_disk_note(record.path))
        outcome = finalize(outcome, failure)
        record.end_attempt(
            state=outcome.state,
            exit_code=outcome.code,
            finished_at=time.time(),
            node_exit_codes=outcome.node_codes,
            stopped_nodes=outcome.stopped,
            failure=failure,
        )
        return Result(outcome.code, AttemptEnd(outcome.state), failure, outcome.noticed_at, outcome.ended_at)

    def _reach(self, plan: LaunchPlan, node, base_dir: str, env: dict):
        """The master checked from this node (this machine), as its launcher dials it."""
        try:
            r = run_bounded(reach_command(plan, node), base_dir, env, REACH_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"its check of the route to the master did not finish within {REACH_TIMEOUT:g} s"
        return reach_problem(r.stdout + r.stderr, plan.world.master_addr, plan.world.master_port)

    def _stacks(self, plan: LaunchPlan, base_dir: str, env: dict) -> dict:
        """Every rank's stack: the local nodes share this machine, one dump finds them all."""
        try:
            r = run_bounded(dump_command(plan, plan.nodes[0]), base_dir, env, 120)
        except subprocess.TimeoutExpired:
            return {}
        return parse_dumps(r.stdout)

    def current_state(self, record: RunRecord, status: RunStatus) -> tuple[str, str]:
        return current_state(status)

    curve_read_seconds = 0.2  # a file on this machine's disk

    def cancel(self, record: RunRecord, status: RunStatus) -> str:
        return cancel_local_run(record, status)

    def _start(self, plan: LaunchPlan, envs, base_dir: str, console: Console, record: RunRecord):
        nodes, threads = [], []
        try:
            for node, env in zip(plan.nodes, envs):
                log = os.path.join(base_dir, node.workdir, node.log)
                handle = LocalNode.start(
                    node.machine_rank,
                    node.host,
                    node.command,
                    env=env,
                    cwd=base_dir,
                    log=log,
                    grace=plan.teardown_grace,
                )
                nodes.append(handle)
                threads.append(follow_node(handle.output_fd(), node.machine_rank, console))
        except OSError as e:
            for handle in nodes:
                handle.send("kill")
            record.update_status(state=RunState.FAILED, exit_code=2, finished_at=time.time())
            raise KitError(f"could not start node {len(nodes)} on this machine: {e}") from None
        return nodes, threads


def _node_failure(plan, base_dir: str, outcome, i: int):
    node = plan.nodes[i]
    return summarize(
        node.machine_rank,
        node.host,
        outcome.node_codes[i],
        read_log(os.path.join(base_dir, node.workdir, node.log)),
        known_codes(node.argv),
        ranks_dir=os.path.join(base_dir, node.workdir, plan.run_dir, f"node{node.machine_rank}.ranks"),
        procs_per_node=plan.world.procs_per_node,
    )


BACKEND = LocalBackend

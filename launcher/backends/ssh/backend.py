"""Run a plan on remote hosts over SSH: check every host, upload the plan's files, start each node's command
unchanged under kit's watchdog in a session of its own, stream the output, tear down together."""

import logging
import os
import posixpath
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from launcher.backends.base import Backend, Result
from launcher.backends.ssh.failure import host_disk_note, run_failure
from launcher.backends.ssh.watch import HOST_TIMEOUT, fetch_rank_stderr, keep_in_touch, reach, stacks
from launcher.environment import process_env
from launcher.errors import KitError, per_line
from launcher.insight.watch import InsightWatch
from launcher.planning.model import LaunchPlan, NodePlan
from launcher.records import RunRecord
from launcher.states import AttemptEnd, RunState
from launcher.status import RunStatus
from launcher.supervise import tree
from launcher.supervise.console import Console, follow_node
from launcher.supervise.disk import with_full_disk
from launcher.supervise.hang import HangWatch
from launcher.supervise.supervisor import Cancel, finalize, supervise
from launcher.supervise.world import WorldWatch, ranks_started

log = logging.getLogger(__name__)


def remote_env(plan: LaunchPlan, node: NodePlan, environ) -> dict:
    """What the node adds to the remote login's environment, secrets included: sent over the channel's stdin."""
    return process_env(plan, node, environ, inherit=False)


def load_ahead() -> None:
    """What an SSH run needs (the backend, the checks' modules, the program's watchdog part), loaded before the
    plan is there: kit waits for its planner anyway (commands/planner.py), and the checks then go out at once.
    Also what the hosts' threads use, so that they import nothing: a thread importing kit's modules while another
    does can deadlock on their package locks."""
    from launcher.backends.ssh.boot import boot_source
    from launcher.backends.ssh.gate import read_checks  # noqa: F401
    from launcher.backends.ssh.preflight import gate_host  # noqa: F401
    from launcher.preflight.entrypoint import CheckResult  # noqa: F401
    from launcher.render.envcheck import probe_lines  # noqa: F401
    from launcher.transport.connect import connect_each  # noqa: F401
    from launcher.transport.sftp import SftpUnavailable  # noqa: F401

    boot_source()


class SshBackend(Backend):
    name = "ssh"

    @property
    def record_stays_here(self) -> bool:
        """The hosts may have disks of their own: the record and the streamed logs stay where kit runs."""
        return True

    def __init__(self):
        self.settings, self.addresses, self.entrypoint = {}, {}, None
        self.conns, self.gates, self._pid = {}, {}, None
        self.timings = {}  # seconds per phase, kept in status.json (bench/ssh_fanout.py reads them)
        from launcher.transport.hostkeys import Accepted

        self.accepted = Accepted()

    def use(self, binding: dict) -> None:
        """The connection settings (not part of the plan) and the job's entrypoint for the preflight
        (placement.binding)."""
        super().use(binding)
        self.settings, self.addresses, self.entrypoint = (
            binding["settings"],
            binding["addresses"],
            binding["entrypoint"],
        )

    def check(self, plan: LaunchPlan, base_dir: str) -> None:
        """Reachable, python found, entrypoint there, master port free: on every host, before anything starts."""
        for node in plan.nodes:
            remote_env(plan, node, os.environ)
        try:
            self._connect_and_check(plan)
        except KeyboardInterrupt:  # closing the waiting channels is all it takes: nothing has started
            self._close()
            raise KitError("interrupted while checking the hosts; nothing was started") from None

    def _connect_and_check(self, plan: LaunchPlan) -> None:
        """Each host in its own thread: connect, then at once its nodes' launch channels with their checks.
        Raise (starting nothing) if any host could not be reached or failed a check."""
        from launcher.backends.ssh.preflight import gate_host
        from launcher.transport.endpoint import resolve

        load_ahead()  # the hosts' threads below import nothing (done already when kit logged in early)
        from launcher.transport.connect import connect_each

        started, connected = time.monotonic(), []
        # A node's watchdog that hears nothing from kit (its pings) for this long stops the node by itself.
        heartbeat = 2 * float(self.settings.get("host_timeout") or HOST_TIMEOUT)

        digests = None
        synced: list = []  # each host's Synced, when the plan syncs code (sync_into)
        fingerprints: dict = {}  # rank -> the node's environment, as its checks saw it (insight/drift.py)
        if plan.sync is not None:
            from launcher.backends.ssh.sync import LocalDigests, sync_into

            digests = LocalDigests(plan.sync)

        def then(conn):
            connected.append(time.monotonic())
            if digests is not None:  # the code first: the checks look for the entrypoint in it
                problem = sync_into(conn, plan, digests, synced)
                if problem:
                    return {}, [problem]
            return gate_host(conn, plan, self.entrypoint, heartbeat, fingerprints)

        from launcher.backends.ssh.early import claim

        early = claim()  # logins opened while kit was starting, used where they match the validated config
        hosts = list(dict.fromkeys(n.host for n in plan.nodes))
        self.conns, results, problems = connect_each(
            [resolve(h, self.addresses.get(h), self.settings) for h in hosts],
            self.accepted,
            then,
            early=early and early.take,
        )
        if early is not None:  # early logins never accept new keys (early._endpoints)
            early.close()  # any the plan does not use
        self._pid = os.getpid()
        self.gates = {}
        for gates, host_problems in results.values():
            self.gates.update(gates)
            problems += host_problems
        if problems:
            self._close()
            raise per_line(problems)  # one line per host, each like a single error
        try:  # the job's env_check on the nodes' fingerprints: the table said; strict refuses the run
            from launcher.insight.drift import judge_plan

            judge_plan(plan, fingerprints)
        except KitError:
            self._close()  # the waiting nodes end, having started nothing
            raise
        if plan.sync is not None and synced:
            from launcher.backends.ssh.sync import summary

            log.info(summary(sorted(synced, key=lambda s: s.host), plan.sync.source))
        self.timings["connect_s"] = round(max(connected) - started, 3)  # the last host's handshake done
        self.timings["preflight_s"] = round(time.monotonic() - started - self.timings["connect_s"], 3)

    def execute(self, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None) -> Result:
        console = console or Console(sys.stdout, run_id=plan.run_id)
        if self._pid != os.getpid():
            # A forked (detached) supervisor: the parent closed its connections before the fork (release), which
            # ended the waiting gates without starting anything; log in and check again.
            try:
                self._connect_and_check(plan)
            except KitError:
                record.update_status(state=RunState.FAILED, exit_code=2, finished_at=time.time())
                raise
        record.update_status(
            ssh=self.settings, accepted_host_keys=self.accepted.keys, teardown_grace=plan.teardown_grace
        )
        with Cancel(on_hangup=console.hang_up) as cancel:
            try:
                started = time.monotonic()
                self._upload(plan)
                self.timings["upload_s"] = round(time.monotonic() - started, 3)
                nodes, threads = self._start(plan, record, console)
                self.timings["start_s"] = round(time.monotonic() - started - self.timings["upload_s"], 3)
            except KitError:
                record.update_status(state=RunState.FAILED, exit_code=2, finished_at=time.time())
                raise
            record.update_status(
                state=RunState.RUNNING,
                started_at=time.time(),
                supervisor_pid=os.getpid(),
                supervisor_start=tree.started_at(os.getpid()),
                nodes=[n.record() for n in nodes],
                timings=self.timings,
            )
            pinging = keep_in_touch(self.conns, nodes, self.settings)
            watch = WorldWatch(
                plan,
                lambda n: ranks_started(n.workdir, plan.run_dir, n, listdir=self.conns[n.host].listdir),
                lambda n: reach(self.conns, plan, n),
            )
            hang = HangWatch(plan, watch, lambda: console.rank_output_at, lambda: stacks(self.conns, plan), record.path)
            outcome = supervise(
                nodes,
                cancel,
                on_stop=lambda: console.note(
                    f"kit: stopping run {plan.run_id} on every host: SIGTERM to every process, SIGKILL after "
                    f"{plan.teardown_grace:.0f} s (a Ctrl-C shortens the wait)"
                ),
                watches=[watch, hang, InsightWatch(plan, record, watch, console.warn)],
            )
            pinging.set()
            for node, t in zip(nodes, threads):
                t.join(timeout=0.2 if node.lost else 10)  # a lost host's stream may never end
        unclean = sorted({n.host for n in nodes if n.lost})
        if unclean and outcome.state == RunState.CANCELLED:
            console.note(
                f"kit: could not clean host(s) {', '.join(unclean)} (no answer); their watchdogs stop "
                f"the run's processes there by themselves",
                logging.WARNING,
            )
        disk_note = None
        if outcome.first_failed is not None and not nodes[outcome.first_failed].lost:
            # The failing rank's own stderr, teed on its host: what it said last about its error (the node log
            # interleaves its stdout and stderr, so its last line may be neither).
            for i in outcome.failed_nodes or (outcome.first_failed,):
                if not nodes[i].lost:
                    fetch_rank_stderr(self.conns.get(plan.nodes[i].host), plan, plan.nodes[i], record)
            failed = plan.nodes[outcome.first_failed]
            disk_note = host_disk_note(self.conns.get(failed.host), failed.host, failed.workdir)
        self._close()
        if unclean:
            record.update_status(
                note=f"host(s) {', '.join(unclean)} could not be cleaned: no answer; the node "
                f"watchdogs there stop the run's processes by themselves"
            )
        failure = outcome.failure
        if outcome.first_failed is not None:
            failure = run_failure(plan, record, outcome, nodes)
            if not nodes[outcome.first_failed].lost:
                failure = with_full_disk(failure, disk_note)
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

    def _upload(self, plan: LaunchPlan) -> None:
        """The plan's files each node needs into the node's workdir (SFTP, hosts in parallel)."""
        from launcher.backends.ssh.placement import uploads

        def one(node):
            conn = self.conns[node.host]
            for name, path in uploads(plan, node):
                conn.put(path, plan.files[name])

        if any(node.files for node in plan.nodes):
            self._parallel(one, plan.nodes, "could not upload the run's files")

    def _start(self, plan: LaunchPlan, record: RunRecord, console: Console):
        from launcher.backends.ssh.node import SshNode

        def one(node):
            chan, early = self.gates[node.machine_rank]
            return SshNode.attach(
                node.machine_rank,
                node.host,
                self.conns[node.host],
                chan,
                early=early,
                env=remote_env(plan, node, os.environ),
                log_path=record.file(posixpath.basename(node.log)),
            )

        nodes = self._parallel(one, plan.nodes, "could not start the node")
        threads = [follow_node(n.read, n.rank, console) for n in nodes]
        return nodes, threads

    def _parallel(self, fn, nodes, what: str) -> list:
        with ThreadPoolExecutor(max_workers=max(1, min(64, len(nodes)))) as pool:
            futures = [pool.submit(fn, n) for n in nodes]
            results, errors = [], []
            for node, f in zip(nodes, futures):
                try:
                    results.append(f.result())
                except Exception as e:  # paramiko and socket errors: name the host, no traceback
                    errors.append(f"host {node.host}: {what}: {e}")
        if errors:
            for r in results:
                if r is not None and hasattr(r, "send"):
                    r.send("kill")
            self._close()
            raise per_line(errors)
        return results

    def current_state(self, record: RunRecord, status: RunStatus) -> tuple[str, str]:
        from launcher.backends.ssh.cancel import current_state

        return current_state(record, status)

    def cancel(self, record: RunRecord, status: RunStatus) -> str:
        from launcher.backends.ssh.cancel import cancel_ssh_run

        return cancel_ssh_run(record, status)

    def release(self) -> None:
        """Before kit forks (a detached supervisor, a sweep's trials): close every connection, waiting gates
        included (which starts nothing), and wait for paramiko's threads to end (transport.ssh.close_and_wait)."""
        from launcher.transport.ssh import close_and_wait

        close_and_wait(list(self.conns.values()))
        self.conns, self.gates = {}, {}

    def _close(self) -> None:
        from launcher.transport.ssh import close_all

        close_all(self.conns.values())
        self.conns = {}

    def doctor_rows(self, cluster, job, plan) -> list:
        from launcher.backends.ssh.doctor import doctor_rows

        return doctor_rows(cluster, job, plan)

    def read_output(self, plan: LaunchPlan, base_dir: str, path: str, limit: int):
        """Node 0's file over SFTP (`path` relative to its workdir, itself relative to the login's home, like the
        node's `cd`)."""
        from launcher.transport.connect import connect
        from launcher.transport.endpoint import resolve

        node = plan.nodes[0]
        conn = connect(resolve(node.host, self.addresses.get(node.host), self.settings), self.accepted)
        try:
            sftp = conn.client.open_sftp()
            with sftp.open(posixpath.join(node.workdir, path), "rb") as f:
                return f.read(limit)
        except IOError:
            return None
        finally:
            conn.close()


BACKEND = SshBackend

"""The subprocess backend's delivery: each node's command from the plan, as planned, in a process group of its own;
the first node that fails stops the others; cancel signals the supervisor, then whatever process group is left."""

import os
import re
import signal
import subprocess
import time

from launcher.backends.base import Backend, Result
from launcher.errors import KitError
from launcher.states import AttemptEnd, RunState
from launcher.status import NodeStatus

POLL = 0.1


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_alive(pgid) -> bool:
    """A process of the group runs (a zombie does not count: kit may be the subreaper its orphans end under)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _stop_groups(pgids, grace: float) -> None:
    """SIGTERM to every group, SIGKILL to what is left after `grace` seconds; return once none is left."""
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while any(_group_alive(g) for g in pgids) and time.monotonic() < deadline:
        time.sleep(POLL)
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while any(_group_alive(g) for g in pgids):
        time.sleep(POLL)


def _rank_code(log: str, code: int) -> int:
    """The failing rank's own exit code, from its launcher's failure table in the node log (torchrun's
    `exitcode  : N`), else the node's."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            found = re.search(r"exitcode\s*:\s*(\d+)", f.read())
    except OSError:
        return code
    return int(found.group(1)) if found and int(found.group(1)) else code


class SubprocessBackend(Backend):
    name = "subprocess"

    def check(self, plan, base_dir):
        for node in plan.nodes:
            workdir = os.path.join(base_dir, node.workdir)
            if not os.path.isdir(workdir):
                raise KitError(f"workdir: node {node.machine_rank}'s {workdir} is no directory here")

    def execute(self, plan, record, base_dir, console=None):
        stop = []
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.append("cancelled"))
        procs = []
        try:
            for node in plan.nodes:
                log = os.path.join(base_dir, node.workdir, node.log)
                os.makedirs(os.path.dirname(log), exist_ok=True)
                env = {k: v for k, v in os.environ.items() if not plan.inherit.drops(k)}
                env.update(node.env)
                with open(log, "ab") as out:
                    procs.append(
                        subprocess.Popen(
                            ["bash", "-c", node.command],
                            cwd=os.path.join(base_dir, node.workdir),
                            env=env,
                            stdin=subprocess.DEVNULL,
                            stdout=out,
                            stderr=subprocess.STDOUT,
                            start_new_session=True,
                        )
                    )
            record.update_status(
                state=RunState.RUNNING,
                started_at=time.time(),
                supervisor_pid=os.getpid(),
                nodes=[
                    NodeStatus(rank=n.machine_rank, host=n.host, pid=p.pid, pgid=p.pid)
                    for n, p in zip(plan.nodes, procs)
                ],
            )
            codes = [None] * len(procs)
            failed = None
            while not stop and None in codes:
                for i, p in enumerate(procs):
                    if codes[i] is None and p.poll() is not None:
                        codes[i] = p.returncode if p.returncode >= 0 else 128 - p.returncode
                        if codes[i] and failed is None:
                            failed = i
                if failed is not None:
                    break
                time.sleep(POLL)
            _stop_groups([p.pid for p in procs], plan.teardown_grace)
            for i, p in enumerate(procs):
                p.wait()
                if codes[i] is None:
                    codes[i] = p.returncode if p.returncode >= 0 else 128 - p.returncode
        finally:
            signal.signal(signal.SIGTERM, previous)
        if stop:
            state, code = AttemptEnd.CANCELLED, 143
        elif failed is not None:
            node = plan.nodes[failed]
            state, code = AttemptEnd.FAILED, _rank_code(os.path.join(base_dir, node.workdir, node.log), codes[failed])
        else:
            state, code = AttemptEnd.SUCCEEDED, 0
        record.end_attempt(state=RunState(state.value), exit_code=code, finished_at=time.time(), node_exit_codes=codes)
        return Result(code, state)

    def current_state(self, record, status):
        if status.state in (RunState.STARTING, RunState.RUNNING) and status.supervisor_pid:
            if not _alive(status.supervisor_pid):
                return RunState.LOST, f"its supervisor (pid {status.supervisor_pid}) is gone"
        return status.state, status.note

    def cancel(self, record, status):
        if status.supervisor_pid and status.supervisor_pid != os.getpid() and _alive(status.supervisor_pid):
            os.kill(status.supervisor_pid, signal.SIGTERM)
            deadline = time.monotonic() + (status.teardown_grace or 40.0) + 10
            while _alive(status.supervisor_pid) and time.monotonic() < deadline:
                time.sleep(POLL)
        _stop_groups([n.pgid for n in status.nodes if n.pgid], 5.0)
        if RunState.read(record.read_status().state) in (RunState.STARTING, RunState.RUNNING):
            record.update_status(state=RunState.CANCELLED, finished_at=time.time())
        return f"run {status.run_id}: cancelled; no process of it is left"


BACKEND = SubprocessBackend

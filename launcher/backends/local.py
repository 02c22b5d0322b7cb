"""Run a plan on this machine: one launcher process group per (simulated) node, torn down together."""

import os
import signal
import subprocess
import sys
import time

from launcher.backends.output import PrefixedOutput
from launcher.errors import KitError
from launcher.plan.model import LaunchPlan, NodePlan
from launcher.procs import start_time, terminate_groups
from launcher.runs import RunRecord
from launcher.secrets import is_secret_name

POLL_SECONDS = 0.2
TEARDOWN_GRACE = 10.0


def exit_code(returncode: int) -> int:
    """Popen reports death by signal N as -N; shells report it as 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def node_environment(node: NodePlan, environ: dict[str, str]) -> dict[str, str]:
    """The submitter's environment plus secret values, which the command text never carries."""
    missing = [n for n in node.secret_env if n not in node.env and n not in environ]
    if missing:
        raise KitError(f"secret_env: {', '.join(missing)} not set in your environment; export it first")
    return {**environ, **{k: v for k, v in node.env.items() if is_secret_name(k) or k in node.secret_env}}


class _Interrupted(Exception):
    def __init__(self, signum):
        self.signum = signum


def _raise_interrupt(signum, _frame):
    raise _Interrupted(signum)


class LocalBackend:
    name = "local"

    def check(self, plan: LaunchPlan) -> None:
        """Fail before anything is written or started."""
        for node in plan.nodes:
            node_environment(node, dict(os.environ))

    def execute(self, plan: LaunchPlan, record: RunRecord, base_dir: str, out=sys.stdout) -> int:
        envs = [node_environment(n, dict(os.environ)) for n in plan.nodes]
        output = PrefixedOutput(out)
        procs, pumps = [], []
        previous = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            for node, env in zip(plan.nodes, envs):
                proc = subprocess.Popen(
                    ["bash", "-c", node.command], cwd=base_dir, env=env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                )
                procs.append(proc)
                log = os.path.join(base_dir, node.workdir, node.log)
                pumps.append(output.pump(proc.stdout, node.machine_rank, log))
            record.update_status(state="running", started_at=time.time(), supervisor_pid=os.getpid(),
                                 supervisor_start=start_time(os.getpid()),
                                 nodes=[{"rank": n.machine_rank, "host": n.host, "pid": p.pid, "pgid": p.pid}
                                        for n, p in zip(plan.nodes, procs)])
            code, state = self._supervise(procs)
        except _Interrupted as e:
            code, state = 128 + e.signum, "cancelled"
        finally:
            terminate_groups([p.pid for p in procs], TEARDOWN_GRACE)
            for p in procs:
                p.wait()
            for t in pumps:
                t.join(timeout=5)
            for s, handler in previous.items():
                signal.signal(s, handler)
        record.update_status(state=state, exit_code=code, finished_at=time.time(),
                             node_exit_codes=[exit_code(p.returncode) for p in procs])
        return code

    @staticmethod
    def _supervise(procs) -> tuple[int, str]:
        """Wait until all nodes succeed, or the first one fails (its code is the run's)."""
        while True:
            codes = [p.poll() for p in procs]
            failed = [c for c in codes if c not in (None, 0)]
            if failed:
                return exit_code(failed[0]), "failed"
            if all(c == 0 for c in codes):
                return 0, "succeeded"
            time.sleep(POLL_SECONDS)

"""The backend contract: what every backend does with a LaunchPlan, and the defaults for what only some do.

Modelled on TorchX's `Scheduler` (submit = dry-run + schedule, describe, cancel, log_iter) and submitit's
`Executor` (submit -> Job, submit_array). A backend delivers the plan it is given and never re-derives any part of
it; kit's one launch pipeline (launcher/core/launch.py) calls it in this order:

    use(binding) -> check(plan, base_dir) -> [record written] -> execute(...) or detach(...)
    [-> restart_refused(record) -> execute_again(plan of attempt k, ...)]   (launcher/attempts.py)

and `kit status / logs / cancel` (and the Python API's Run handle) call current_state, fetch_logs, cancel on a
record. Planning (where the nodes go, what each node runs) is the backend's Placement (planning/placement.py).

What a backend is (a package named by a `kit.backends` entry point, backends/registry.py):

* must implement, 4 abstract methods: `check` (refuse before anything starts), `execute` (deliver the plan's node
  commands as planned, follow them to the end, write the outcome with record.update_status / end_attempt, return a
  Result), `current_state` (a record's state now: "lost" when its follower died), `cancel` (nothing of the run
  left when it returns).
* may override: `detach` (default: a supervisor process of kit's runs execute), `execute_again`,
  `restart_refused`, `use`, `release`, `fetch_logs`, `read_output`, `fetch_output`, `doctor_rows`, `submit_many` /
  `cancel_many` (a job array), and the attributes `record_stays_here`, `outlives_supervisor`, `curve_read_seconds`.
* its Placement (planning/placement.py): a subclass of `Placement` whose defaults fit nodes on the hosts the
  cluster config lists; a backend overrides only what differs (10 public methods: validate, at_edge, binding,
  health_scope, place, layout, submission, dryrun, lanes, array_plan; what is constant per backend is attributes).
* its typed handle (optional): a frozen `Handle` dataclass (backends/handle.py) of the facts only it keeps about a
  run (a SLURM job id, SSH connection settings), each field checked when read; kept in status.json under "handle".

tests/plugins/kit_subprocess_backend is a backend written on this contract alone (Backend and Placement, nothing of
kit's own backends), and tests/backends/test_contract.py runs the same tests on it, local, SSH and SLURM."""

import abc
import os
from typing import Any, Optional

from launcher.backends.attempts import Result
from launcher.filestore import write_atomic
from launcher.planning.model import LaunchPlan
from launcher.records import RunRecord
from launcher.states import RunState
from launcher.status import RunStatus


class Backend(abc.ABC):
    name = "?"
    # A run goes on when its kit supervisor stops (a scheduler keeps the job): a sweep driver that stops a trial
    # (pruned, cancelled) then stops it as `kit cancel` does (Backend.cancel), not only through its supervisor.
    outlives_supervisor = False
    # Seconds between two reads of a running sweep trial's learning curve (read_output): a remote file costs a
    # connection per read.
    curve_read_seconds = 2.0

    @property
    def record_stays_here(self) -> bool:
        """The run's record is kept where kit runs (True), or below the cluster's workdir as the nodes see it."""
        return False

    # ---- every backend
    @abc.abstractmethod
    def check(self, plan: LaunchPlan, base_dir: str) -> None:
        """Fail (KitError, one line, exit 2) before anything starts: entrypoint, interpreter, port, hosts,
        partition... whatever this backend can check where its nodes are. Starts nothing that outlives it."""

    @abc.abstractmethod
    def execute(self, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None) -> Result:
        """Deliver the plan and follow the run to its end (or, on SLURM, until following stops); record the
        outcome in the record."""

    @abc.abstractmethod
    def current_state(self, record: RunRecord, status: RunStatus) -> tuple[str, str]:
        """(state, note) of a record now: a "running" record whose supervisor died is "lost"; a SLURM job is
        asked about. May bring `record` up to date: that record only, wherever it is now (a re-run's set-aside
        attempt is itself, never the directory it was moved from)."""

    @abc.abstractmethod
    def cancel(self, record: RunRecord, status: RunStatus) -> str:
        """Stop every process of the run, wherever it is; return once none is left, with the line to print."""

    def execute_again(self, plan: LaunchPlan, record: RunRecord, base_dir: str, console=None) -> Result:
        """Attempt k > 1 of the run (launcher/attempts.py builds its plan): its generated files written over the
        last attempt's, the checks run as for the first, then execute(). The plan goes into the record beside the
        first (plan.attempt<k>.json), as `kit submit --dry-run --attempt k` prints it."""
        root = self.record_root(plan.nodes[0].workdir, base_dir)
        for rel, content in plan.files.items():
            write_atomic(os.path.join(root, rel), content)
        record.keep_attempt_plan(plan)
        self.check(plan, base_dir)
        record.update_status(reopen=True, state=RunState.STARTING)
        return self.execute(plan, record, base_dir, console)

    def restart_refused(self, record: RunRecord) -> str:
        """Why the run may not start again though the job's `restarts` allow it ("" if it may): a budget of the
        backend's own."""
        return ""

    # ---- defaults
    binding: Any = None

    def use(self, binding) -> None:
        """The settings the plan leaves out (connection settings, the entrypoint for the checks): plain data from
        the backend's Placement.binding(). Subclasses that read it call this too (a detached supervisor gets it)."""
        self.binding = binding

    def record_root(self, workdir: str, base_dir: str) -> str:
        """Where the run's record goes: `base_dir` when it stays here, else the cluster's workdir (relative to
        `base_dir`, as the nodes see it)."""
        if self.record_stays_here:
            return base_dir
        return os.path.normpath(os.path.join(base_dir, workdir))

    def outputs_here(self, workdir: str, base_dir: str) -> Optional[str]:
        """The workdir as this machine sees it, or None when the nodes' files are elsewhere."""
        return None if self.record_stays_here else os.path.normpath(os.path.join(base_dir, workdir))

    def detach(self, plan: LaunchPlan, record: RunRecord, base_dir: str, inputs=None) -> None:
        """Start the run and return at once. By default a supervisor process of its own, spawned in a session of
        its own, runs the attempts (detached.py; `inputs`: the planner's, for a restart's plan); a backend whose
        scheduler keeps the run going overrides this."""
        from launcher.backends.detached import spawn

        self.release()
        spawn(self.name, self.binding, plan, record, base_dir, inputs)

    def release(self) -> None:
        """Before kit forks or spawns the supervisor: close connections and threads (SSH). Nothing by default."""

    def fetch_logs(self, record: RunRecord, status: RunStatus) -> None:
        """Bring the record's node logs up to date where they are written elsewhere. Nothing by default."""

    def read_output(self, plan: LaunchPlan, base_dir: str, path: str, limit: int) -> Optional[bytes]:
        """Up to `limit` bytes of a file the run wrote, `path` relative to node 0's workdir; None if absent."""
        try:
            with open(os.path.join(base_dir, plan.nodes[0].workdir, path), "rb") as f:
                return f.read(limit)
        except OSError:
            return None

    def fetch_output(self, record: RunRecord, status: RunStatus, path: str, limit: int) -> Optional[bytes]:
        """A file a run wrote (`path` relative to its workdir), found from its record alone (no binding); None
        when this backend's records do not say where (the sweep then relies on the copy made at the trial's
        end)."""
        return None

    def doctor_rows(self, cluster, job, plan) -> list:
        """`kit doctor`: (where, check, verdict, detail) rows. Not every backend has anything to check."""
        from launcher.errors import KitError

        raise KitError(
            f"kit doctor checks remote clusters (hosts, a scheduler); {cluster.name} is a {self.name} "
            f"cluster, checked before each run"
        )

    def submit_many(self, sweep, todo: list, specs: dict, base_dir: str) -> Optional[dict]:
        """Submit a sweep's trials `todo` (TrialPlans) as one (a job array), creating their records (`specs`:
        trial index -> (job record, cluster record)); return what the sweep's record keeps about it. None (the
        default): the sweep launches each trial like one `kit submit`, lane by lane (launcher/sweeps/driver.py)."""
        return None

    def cancel_many(self, sweep_data: dict, sweep_path: str) -> Optional[str]:
        """Cancel what submit_many submitted as one; the line to print. None: the trials are cancelled one by
        one, each through its own record."""
        return None

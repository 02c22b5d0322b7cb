"""kit from Python: the same functions the CLI calls, returning handles.

    import kit          # the `launcher` package under its own name (kit/__init__.py)
    run = kit.submit("jobs/bert_cls.yaml", cluster="cluster_configs/ssh.example.yaml", nodes=2,
                     set={"deepspeed.zero_stage": 3}, args=["--epochs", "1"])   # returns at once
    run.wait(); run.state; run.exit_code; run.failure; run.logs(); run.cancel()

`submit` and `sweep` return once the checks passed and the run (or the sweep's driver) goes on in a supervisor
process of its own, as with `kit submit --detach`: the calling program may exit. Bad input raises KitError with
the one line the CLI prints, in the API's words (`nodes=2`, not `--nodes 2`), before anything is written or
started; a scheduler's refusal is its subclass SchedulerError, a record kit cannot read or lock RecordError.
Relative paths (job and cluster files, the cluster's workdir, run records) are taken from the current directory,
as the CLI takes them."""

import functools
import json
import os
import time
from typing import Optional, Sequence

from launcher import records
from launcher.backends import registry
from launcher.core.hosts import hosts  # noqa: F401  (kit.hosts(clear=None): the hosts' health, as kit hosts --json)
from launcher.core.launch import launch
from launcher.core.listing import find_record
from launcher.core.lookup import state_now
from launcher.core.prepare import dry_checks, load, plan_for, prepare
from launcher.core.request import Request
from launcher.core.waiting import cancel_run
from launcher.errors import KitError, Option
from launcher.states import RunState
from launcher.status import RunStatus
from launcher.supervise.failure import cause

POLL = 0.5


def keyword(option: Option) -> str:
    """An option an error names, in the API's words: `nodes=2`, `run_id`, `set['deepspeed.zero_stage']=3`, and
    the job's own arguments as where they go (`in args=['--lr', '0.1']`)."""
    if option.name == "args":
        return f"in args={list(option.value)!r}"
    if option.name == "set":
        key, sep, value = str(option.value or "").partition("=")
        return f"set[{key!r}]={value}" if sep else "set"
    return option.name if option.value is None else f"{option.name}={option.value}"


def in_api_words(fn, renamed: Optional[dict] = None):
    """A public function of the API: the core's one-line errors said with its keyword arguments, not flags
    (`renamed`: the core's option name -> this function's keyword, e.g. run_id -> sweep_id for kit.sweep)."""
    import functools

    renamed = renamed or {}

    def say(option: Option) -> str:
        return keyword(Option(renamed[option.name], option.value) if option.name in renamed else option)

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except KitError as e:
            raise e.in_terms(say) from None

    return wrapper


_INTS = ("nodes", "gpus", "procs_per_node", "port")
_STRS = ("strategy", "mixed_precision")


def check_arguments(**given) -> None:
    """The arguments of kit.submit / plan / sweep, by type (before anything deeper sees a wrong type): one
    KitError naming the first that is wrong as the caller wrote it."""
    for name in _INTS:
        v = given.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise KitError(f"{name}={v!r}: give an int (e.g. {name}=2) or leave it out")
    for name in _STRS:
        v = given.get(name)
        if v is not None and not isinstance(v, str):
            raise KitError(f"{name}={v!r}: give a string (e.g. strategy='ddp', mixed_precision='bf16') or leave it out")
    run_id = given.get("run_id")
    if run_id is not None and (not isinstance(run_id, str) or not run_id):
        raise KitError(
            f"run_id={run_id!r}: give a non-empty string (letters, digits, '.', '_', '-') or leave it "
            f"out for a generated one"
        )
    args = given.get("args")
    if args is not None and (isinstance(args, (str, bytes)) or not all(isinstance(a, str) for a in args)):
        raise KitError(f"args={args!r}: a list of strings, e.g. args=['--epochs', '1']")
    for name in ("cluster", "sweep", "run_root"):
        v = given.get(name)
        if v is not None and not isinstance(v, (str, os.PathLike)):
            raise KitError(f"{name}={v!r}: a path (a string), or leave it out")


def _request(
    job, cluster, nodes, gpus, procs_per_node, strategy, mixed_precision, port, set, args, run_id, sweep=None
) -> Request:
    """The submission the keywords name, as the core takes it; a keyword of the wrong kind is a one-line KitError."""
    check_arguments(
        nodes=nodes,
        gpus=gpus,
        procs_per_node=procs_per_node,
        strategy=strategy,
        mixed_precision=mixed_precision,
        port=port,
        run_id=run_id,
        args=args,
        cluster=cluster,
        sweep=sweep,
    )
    if not isinstance(job, (str, os.PathLike)):
        raise KitError(f"job: a job spec's path, e.g. 'jobs/bert_cls.yaml' (got {job!r})")
    if not isinstance(set or {}, dict):
        raise KitError(f"set: a mapping of field to value, e.g. {{'deepspeed.zero_stage': 3}} (got {set!r})")
    if isinstance(args, str):
        raise KitError("args: a list of words, e.g. args=['--epochs', '1'] (not one string)")
    return Request(
        job=os.fspath(job),
        cluster=_path(cluster),
        sweep=_path(sweep),
        run_id=run_id,
        nodes=nodes,
        gpus=gpus,
        procs_per_node=procs_per_node,
        strategy=strategy,
        mixed_precision=mixed_precision,
        port=port,
        sets=tuple(_set_item(k, v) for k, v in (set or {}).items()),
        args=tuple(args or ()),
    )


def _plain(data):
    """`data` as `--json` prints it: plain str, int, float, list and dict (a typed state is its word)."""
    return json.loads(json.dumps(data))


def _path(p) -> Optional[str]:
    if p is not None and not isinstance(p, (str, os.PathLike)):
        raise KitError(f"expected a file's path, got {p!r}")
    return None if p is None else os.fspath(p)


def _set_item(key, value) -> str:
    import yaml

    from launcher.spec.overrides import set_item

    if not isinstance(key, str):
        raise KitError(f"set: field names are strings like 'deepspeed.zero_stage' (got {key!r})")
    try:
        return set_item(key, value)
    except yaml.YAMLError:
        raise KitError(
            f"set: {key}: {value!r} is not plain data (numbers, strings, booleans, lists, mappings)"
        ) from None


class Plan:
    """A run's plan as data: `.plan` (the LaunchPlan), `.to_dict()` (secrets masked), `str()` is the dry-run."""

    def __init__(self, launch_plan):
        self.plan = launch_plan

    @property
    def run_id(self) -> str:
        return self.plan.run_id

    def to_dict(self) -> dict:
        from launcher.render.dryrun import masked_dict

        return masked_dict(self.plan)

    def __str__(self) -> str:
        from launcher.render.dryrun import render_text

        return render_text(self.plan)

    def __repr__(self) -> str:
        w = self.plan.world
        return f"<kit.Plan {self.run_id}: {w.num_machines} node(s) x {w.procs_per_node} on {self.plan.backend}>"


@in_api_words
def plan(
    job,
    *,
    cluster=None,
    nodes: Optional[int] = None,
    gpus: Optional[int] = None,
    procs_per_node: Optional[int] = None,
    strategy: Optional[str] = None,
    mixed_precision: Optional[str] = None,
    port: Optional[int] = None,
    set: Optional[dict] = None,
    args: Sequence[str] = (),
    run_id: Optional[str] = None,
) -> Plan:
    """The dry-run of `kit submit` as data: nothing is written or started."""
    request = _request(job, cluster, nodes, gpus, procs_per_node, strategy, mixed_precision, port, set, args, run_id)
    loaded = load(request)
    if loaded.sweep is not None:
        raise KitError(f"{request.job} has a sweep section; kit.sweep() runs it (kit.plan plans one run)")
    planned = plan_for(loaded, run_id)
    dry_checks(loaded, planned)
    return Plan(planned)


@in_api_words
def submit(
    job,
    *,
    cluster=None,
    nodes: Optional[int] = None,
    gpus: Optional[int] = None,
    procs_per_node: Optional[int] = None,
    strategy: Optional[str] = None,
    mixed_precision: Optional[str] = None,
    port: Optional[int] = None,
    set: Optional[dict] = None,
    args: Sequence[str] = (),
    run_id: Optional[str] = None,
) -> "Run":
    """Check, record and start the run; return its handle at once (the run goes on without this process)."""
    request = _request(job, cluster, nodes, gpus, procs_per_node, strategy, mixed_precision, port, set, args, run_id)
    loaded = load(request)
    if loaded.sweep is not None:
        raise KitError(f"{request.job} has a sweep section; kit.sweep() runs it")
    launched = launch(prepare(loaded, plan_for(loaded, run_id)), os.getcwd(), detach=True)
    return Run(launched.record.path)


@in_api_words
def get_run(run_id: Optional[str] = None, run_root: Optional[str] = None) -> "Run":
    """The run `run_id` (the latest one when None; the beginning of an id will do when it begins no other):
    wherever kit's index of your runs says, or under `run_root`."""
    if run_id is not None and (not isinstance(run_id, str) or not run_id):
        raise KitError(
            f"run_id={run_id!r}: a run id (or its beginning) as a non-empty string, or None for the latest run"
        )
    check_arguments(run_root=run_root)
    return Run(find_record(run_root, run_id, how=("kit.submit()", "see kit.runs(), or pass run_root='DIR'")).path)


def runs_under(run_root: Optional[str] = None) -> list:
    """Every run under `run_root`, or (None) every run of yours kit's index knows and those under ./runs; oldest
    first."""
    from launcher.core.listing import record_paths

    return [Run(path) for path in record_paths(run_root)]


class Run:
    """A run's handle, read from its record (any process can make one: `kit.get_run(id)`)."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.record = records.RunRecord(self.path)

    @property
    def id(self) -> str:
        return self.status.run_id or os.path.basename(self.path)

    @property
    def status(self) -> RunStatus:
        return self.record.read_status()

    @property
    def state(self) -> str:
        """starting, running, pending, requeued, succeeded, failed, cancelled, timeout, preempted, lost, ..."""
        return state_now(self.record)[0]

    @property
    def exit_code(self) -> Optional[int]:
        return self.status.exit_code

    @property
    def failure(self) -> Optional[str]:
        """Why it failed, the line `kit status` prints (`node 1 (n2) rank 3 exited 4 (bad data): ...`), or None."""
        f = self.status.failure
        return None if f is None else cause(f)

    def wait(self, timeout: Optional[float] = None, poll: float = POLL) -> str:
        """Block until the run is over (as `kit wait` does); its final state. TimeoutError after `timeout` s."""
        from launcher.core.waiting import StillGoing, wait_end

        try:
            return wait_end(self.record, timeout, poll)[0]
        except StillGoing as e:
            raise TimeoutError(f"run {self.id} {e}") from None

    def describe(self) -> dict:
        """The run as data, as `kit status RUN --json` prints it: state, exit_code, failure, attempts, nodes, ..."""
        from launcher.core.describe import describe

        state, note = state_now(self.record)
        return _plain(describe(self.record, self.record.read_status(), state, note))

    def report(self, png: Optional[str] = None) -> dict:
        """Where the run's time went, as `kit report RUN --json` prints it; `png`: the timeline drawn there too."""
        from launcher.core.report import report_run

        return _plain(report_run(self.record, png=_path(png)))

    def logs(self, node: Optional[int] = None) -> str:
        """The node logs' text (one node's with `node`), brought up to date where they are written elsewhere."""
        from launcher.supervise.log_lines import node_logs

        status = self.status
        registry.backend(status.backend).fetch_logs(self.record, status)
        found = node_logs(self.path, node) if os.path.isdir(self.path) else []
        if node is not None and not found:
            raise KitError(f"node {node}: no such node log in {self.path}")
        texts = []
        for _, path in found:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            texts.append(text if node is not None else f"==> {os.path.basename(path)} <==\n{text}")
        return "".join(texts)

    def cancel(self) -> str:
        """Stop every process of the run, wherever it is; returns once none is left (the line kit prints)."""
        return cancel_run(self.record)

    def __repr__(self) -> str:
        return f"<kit.Run {self.id} {self.status.state}>"


@functools.partial(in_api_words, renamed={"run_id": "sweep_id"})
def sweep(
    job,
    *,
    sweep=None,
    cluster=None,
    nodes: Optional[int] = None,
    gpus: Optional[int] = None,
    procs_per_node: Optional[int] = None,
    strategy: Optional[str] = None,
    mixed_precision: Optional[str] = None,
    port: Optional[int] = None,
    set: Optional[dict] = None,
    args: Sequence[str] = (),
    sweep_id: Optional[str] = None,
) -> "Sweep":
    """Start a sweep (the job's `sweep:` section, or the file `sweep`); return its handle at once: its trials run
    on (in a driver process of their own, or as a scheduler's job array)."""
    from launcher.sweeps.start import start_sweep, sweep_plan

    request = _request(
        job, cluster, nodes, gpus, procs_per_node, strategy, mixed_precision, port, set, args, sweep_id, sweep=sweep
    )
    loaded = load(request)
    if loaded.sweep is None:
        raise KitError(f"{request.job} has no sweep section; pass sweep='FILE.yaml' (a file with a sweep: section)")
    record = start_sweep(loaded, sweep_plan(loaded, sweep_id), detach=True)
    return Sweep(record.path)


@in_api_words
def get_sweep(sweep_id: Optional[str] = None, run_root: Optional[str] = None) -> "Sweep":
    """The sweep `sweep_id` (the latest one when None): wherever kit's index says, or under `run_root`."""
    from launcher.core.lookup import root_of
    from launcher.sweeps.record import find_sweep, latest_sweep, latest_sweep_root

    root = root_of(run_root, sweep_id) if sweep_id else latest_sweep_root(run_root)
    sweep_id = sweep_id or latest_sweep(root)
    if sweep_id is None:
        raise KitError(f"no sweeps under {root}/ yet")
    return Sweep(find_sweep(root, sweep_id).path)


class Sweep:
    """A sweep's handle: its trials as `kit sweep status --format json` shows them, and the best one."""

    def __init__(self, path: str):
        from launcher.sweeps.record import SweepRecord

        self.path = os.path.abspath(path)
        self.record = SweepRecord(self.path)

    @property
    def id(self) -> str:
        return self.record.sweep_id

    def view(self) -> dict:
        from launcher.sweeps.table import collect

        return collect(self.record, os.path.dirname(self.path))

    @property
    def state(self) -> str:
        return self.view()["state"]

    @property
    def trials(self) -> list:
        return self.view()["trials"]

    @property
    def best(self) -> Optional[dict]:
        view = self.view()
        return next((t for t in view["trials"] if t["run_id"] == view["best"]), None)

    def run(self, index: int) -> Run:
        """Trial `index` as a run."""
        return Run(self.record.trial_dir(f"{self.id}-t{index}"))

    def wait(self, timeout: Optional[float] = None, poll: float = 1.0) -> str:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.state
            if state not in (RunState.RUNNING, RunState.PENDING):
                return state
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"sweep {self.id} still {state} after {timeout:g} s")
            time.sleep(poll)

    def cancel(self) -> str:
        from launcher.sweeps.cancel import cancel_sweep

        return cancel_sweep(self.record)

    def __repr__(self) -> str:
        return f"<kit.Sweep {self.id}>"


__all__ = ["KitError", "Plan", "Run", "Sweep", "get_run", "get_sweep", "plan", "runs_under", "submit", "sweep"]

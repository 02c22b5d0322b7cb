"""The sweep driver on local and SSH clusters: runs the trials lane by lane (lanes.py), one forked supervisor per
running trial (trial_proc.py), prints a line as each trial starts and ends, and the table at the end.

A failed trial does not stop the others, unless `sweep.max_failures` trials in a row failed the same way: then no
more start (Streak, below); nor once the first trial that succeeds has no number at sweep.metric (those running
finish: they are kept, and scored once the metric is fixed; exit 2). Ctrl-C or SIGTERM (`kit cancel <sweep>`)
stops starting trials and forwards the request to every running trial's supervisor, which tears its run down as
for a single run (a second Ctrl-C shortens the grace period, a third kills); the driver returns once every trial
has ended."""

import logging
import os
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from launcher import records
from launcher.errors import KitError, render
from launcher.render.text import duration
from launcher.states import RunState
from launcher.supervise import tree
from launcher.supervise.supervisor import Cancel
from launcher.sweeps import curves, metrics
from launcher.sweeps.cancel import cancel_when_submitted
from launcher.sweeps.plan import replan
from launcher.sweeps.rerun import trial_state
from launcher.sweeps.table import collect, metric_problem, metric_text, render_text, trial_row
from launcher.sweeps.trial_proc import start_trial
from launcher.sweeps.trials import describe

# When a sweep stops launching trials: `sweep.max_failures` trials in a row (in the order they end) that failed the
# same way. The same way: the same exit code, meaning and last words of the first failing rank, wherever it ran (a
# rank, host or node number differs between trials that fail alike); a trial that never started, the same error
# line. A success, or another cause, starts the count again.


def failure_key(status, last_line: str, run_id: str) -> str:
    """What two trials that failed alike share: their failure without where it happened, else kit's last line with
    the trial's own run id left out."""
    f = status.failure
    if f is not None:
        return f"{f.meaning}|{f.code}|{f.last_line}"
    return (last_line or f"exit code {status.exit_code}").replace(run_id, "<trial>")


class Streak:
    def __init__(self, limit: Optional[int]):
        self.limit, self.count = limit, 0
        self.key: Optional[str] = None  # the cause of the failures in a row

    def ended(self, state: str, key: str) -> bool:
        """Count one trial's end; True when this one makes `limit` failures in a row with one cause."""
        if state in (RunState.SUCCEEDED, RunState.CANCELLED, RunState.PRUNED):
            self.key, self.count = None, 0
            return False
        self.count = self.count + 1 if key == self.key else 1
        self.key = key
        return self.limit is not None and self.count >= self.limit


if TYPE_CHECKING:
    from launcher.sweeps.study import Study  # imported when a sweep opens one (it loads Optuna)

POLL_SECONDS = 0.2


@dataclass
class _Running:
    trial: Any  # a TrialPlan
    pid: int
    pipe: int
    started: float
    curve: Any = None  # the trial's metrics.jsonl as read so far (curves.Curve), with early stopping
    pruned: Any = None  # (step, value) the pruner stopped it at
    stopping: bool = False  # kit cancel's stop of its run is under way (a scheduler's job: _stop_run)


def _console_path(record, trial) -> str:
    return record.file(f"t{trial.index}.console.log")


def _last_kit_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.startswith("kit:")]
    except OSError:
        return ""
    return lines[-1] if lines else ""


class Driver:
    def __init__(self, plan, record, ctx, todo, console) -> None:
        self.plan, self.record, self.ctx, self.todo, self.console = plan, record, ctx, todo, console
        self.running: dict[int, _Running] = {}
        self.queues: dict[int, deque] = {}
        self.streak = Streak(plan.spec.max_failures)
        self.scored = False  # sweep.metric was checked against a succeeded trial's metrics file
        self.unread = 0  # succeeded trials whose metrics file was not found
        self.bad_metric = ""  # the line that said it names no number there
        self.notes = 0
        self.said_blind = 0
        self.study: Optional[Study] = None  # the sweep's Optuna study (study.py), for TPE and early stopping
        self.backend: Any = None  # reads the running trials' metrics.jsonl where they write it
        self.read_at = 0.0

    def _note(self, text: str, level: int = logging.INFO) -> None:
        self.notes += 1
        self.console.note(text, level)

    def _ask(self, trial):
        """The trial with the values the study gives it (the plan's, a re-run's recorded ones, or TPE's choice),
        recorded in sweep.json before it starts; None when its plan cannot be built with them."""
        data = self.record.read()
        entry = data["trials"][trial.index]
        fixed = trial.params if self.plan.planned(trial) else entry.get("params")
        number, params = self.study.ask(trial.index, fixed)
        try:
            if params != trial.params:
                trial = replan(trial, params, self.ctx.job, self.plan.spec)
        except KitError as e:
            self.study.tell(trial.index, number, RunState.FAILED, None)
            line = f"kit: error: {render(e)}"
            self.record.update(errors={**(data.get("errors") or {}), trial.run_id: line})
            self._note(
                f"kit: sweep {self.plan.sweep_id}: trial {trial.index} ({describe(params)}) failed: {line}",
                logging.WARNING,
            )
            return None
        self.record.set_trial(trial.index, params=params, asked=number, pruned_at=None)
        return trial

    def _start(self, trial) -> None:
        errors = {k: v for k, v in (self.record.read().get("errors") or {}).items() if k != trial.run_id}
        self.record.update(errors=errors)
        if self.study is not None:
            trial = self._ask(trial)
            if trial is None:
                return
        curve = None
        if self.backend is not None:
            curve = curves.Curve(
                self.backend,
                trial.plan,
                self.ctx.base_dir,
                trial.output_dir,
                self.plan.spec.metric,
                records.RunRecord(os.path.join(self.ctx.run_root, trial.run_id)),
            )
        pid, pipe = start_trial(
            trial, self.ctx, _console_path(self.record, trial), close_fds=[r.pipe for r in self.running.values()]
        )
        self.running[trial.lane] = _Running(trial, pid, pipe, time.time(), curve)
        where = f" on {trial.placement}" if trial.placement else ""
        self._note(
            f"kit: sweep {self.plan.sweep_id}: trial {trial.index} ({describe(trial.params)}) started as "
            f"run {trial.run_id}{where}"
        )

    def _ended(self, run: _Running) -> None:
        os.close(run.pipe)
        trial = run.trial
        state, status = trial_state(os.path.join(self.ctx.run_root, trial.run_id))
        last = _last_kit_line(_console_path(self.record, trial))
        if not status.run_id:  # it stopped before its run record was written: a check failed
            state = RunState.FAILED
            self.record.update(errors={**(self.record.read().get("errors") or {}), trial.run_id: last})
        took = duration(time.time() - run.started)
        value = None
        if run.curve is not None:
            run.curve.read()  # the lines written since the last read, into the record's copy
        if run.pruned is not None and state in (RunState.CANCELLED, RunState.PRUNED):
            records.RunRecord(os.path.join(self.ctx.run_root, trial.run_id)).update_status(state=RunState.PRUNED)
            state = RunState.PRUNED
        elif run.pruned is not None:  # it ended on its own before the stop reached it: not pruned
            self.record.set_trial(trial.index, pruned_at=None)
        if state == RunState.SUCCEEDED:
            row = trial_row(self.record, self.ctx.run_root, trial.run_id)
            value = row["metric"]
            detail = f"{self.plan.spec.metric} {metric_text(row['metric'])}"
        elif state == RunState.PRUNED:
            step, at = run.pruned
            detail = f"stopped at step {step} ({self.plan.spec.metric} {metric_text(at)}): sweep.early_stopping"
        else:
            detail = last or f"exit code {'?' if status.exit_code is None else status.exit_code}"
        # A trial that failed is still said with -q (its line is the only word of why).
        bad = state not in (RunState.SUCCEEDED, RunState.PRUNED)
        self._note(
            f"kit: sweep {self.plan.sweep_id}: trial {trial.index} ({describe(trial.params)}) {state} "
            f"after {took}: {detail}",
            logging.WARNING if bad else logging.INFO,
        )
        if self.study is not None:
            self.study.tell(trial.index, self.record.read()["trials"][trial.index].get("asked"), state, value)
        if state == RunState.SUCCEEDED and not self.scored:
            self.scored = True
            if problem := metric_problem(self.record, self.ctx.run_root, trial.run_id):
                # A file not found may be one not there yet (a shared filesystem's lag, a login host that did not
                # answer): the next trial that succeeds decides. A file without the metric is conclusive.
                self.unread += metrics.MISSING in problem
                if metrics.MISSING not in problem or self.unread >= metrics.UNREAD_TRIALS:
                    self._stop_blind(problem)
                else:
                    self.scored = False
        if self.streak.ended(state, failure_key(status, last, trial.run_id)):
            self._stop(detail)

    def _stop(self, detail: str) -> None:
        """`max_failures` trials in a row failed the same way: start no more (those running finish)."""
        left = sum(len(q) for q in self.queues.values())
        if not left:
            return
        for queue in self.queues.values():
            queue.clear()
        n = self.plan.spec.max_failures
        line = (
            f"kit: sweep {self.plan.sweep_id}: stopped launching trials: {n} in a row failed the same way "
            f"({detail.removeprefix('kit: ')}); {left} trial(s) not started (sweep.max_failures: {n}); fix the "
            f"cause and run the same command again to run them"
        )
        self.record.update(stopped=line.removeprefix("kit: "))
        self._note(line, logging.WARNING)

    def _stop_blind(self, problem: str) -> None:
        """The first trial that succeeded has no number at sweep.metric: no trial could be scored, so none more
        starts; those running finish (they are kept, and scored once the metric is fixed)."""
        left = sum(len(q) for q in self.queues.values())
        for queue in self.queues.values():
            queue.clear()
        wait = f"; the {len(self.running)} running finish" if self.running else ""
        line = (
            f"kit: sweep {self.plan.sweep_id}: {problem}; stopped launching trials ({left} not started{wait}); "
            f"fix sweep.metric and run the same command again: the trials that succeeded are kept"
        )
        self.bad_metric = line
        self.record.update(stopped=line.removeprefix("kit: "))
        self._note(line, logging.ERROR)
        self.said_blind = self.notes

    def _forward(self, cancel: Cancel, sent: int) -> int:
        if sent == 0 and cancel.count and self.running:
            self._note(
                f"kit: stopping sweep {self.plan.sweep_id}: every running trial stops as a run does "
                f"(a Ctrl-C shortens the wait)"
            )
        for _ in range(cancel.count - sent):
            for run in self.running.values():
                self._stop_run(run)
        return cancel.count

    def _read_curves(self) -> None:
        """Each running trial's new metrics.jsonl lines, reported to its study trial; a trial the pruner picks is
        stopped as `kit cancel` stops a run (its supervisor tears it down), and recorded pruned when it has ended."""
        # The backend is set only once the study is open (_open_study, for early stopping).
        if self.backend is None or self.study is None or time.time() - self.read_at < self.backend.curve_read_seconds:
            return
        self.read_at = time.time()
        for run in self.running.values():
            if run.pruned is not None or run.curve is None:
                continue
            # The pruner is asked after each line, in order, as if each had been read alone: a rung compares the
            # trials' values at its own step, however many lines one read brought (a later step's value, lower on
            # a learning curve, would beat the others' at the rung).
            for step, value in run.curve.read():
                self.study.report(run.trial.index, step, value)
                if self.study.should_prune(run.trial.index):
                    run.pruned = (step, value)
                    self.record.set_trial(run.trial.index, pruned_at=step)
                    self._note(
                        f"kit: sweep {self.plan.sweep_id}: trial {run.trial.index} pruned at step {step} "
                        f"({self.plan.spec.metric} {metric_text(value)}); stopping it"
                    )
                    self._stop_run(run)
                    break

    def _stop_run(self, run: _Running) -> None:
        """Stop one trial as `kit cancel <trial>` would: its supervisor tears its run down; where a scheduler keeps
        the job after that (SLURM), the backend's cancel (scancel, then the job's end recorded) runs beside the
        driver, which reaps the supervisor once its following sees the job end."""
        try:
            os.kill(run.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        from launcher.backends import registry

        if run.stopping or not getattr(registry.backend(self.plan.backend), "outlives_supervisor", False):
            return
        run.stopping = True
        record = records.RunRecord(os.path.join(self.ctx.run_root, run.trial.run_id))
        threading.Thread(target=cancel_when_submitted, args=(record,), daemon=True).start()

    def _reap(self) -> None:
        for lane, run in list(self.running.items()):
            if os.waitpid(run.pid, os.WNOHANG)[0]:
                del self.running[lane]
                self._ended(run)

    def _open_study(self) -> None:
        from launcher.backends import registry
        from launcher.sweeps.study import Study

        self.study = study = Study(self.record.path, self.plan.sweep_id, self.plan.spec)
        ended = {}
        for t in self.record.read()["trials"]:
            if t.get("asked") is None:
                continue
            state, _ = trial_state(os.path.join(self.ctx.run_root, t["run_id"]))
            value = (
                trial_row(self.record, self.ctx.run_root, t["run_id"])["metric"]
                if state == RunState.SUCCEEDED
                else None
            )
            ended[t["index"]] = (t["asked"], state, value)
        study.reconcile(ended)
        if self.plan.spec.early_stopping is not None:
            self.backend = registry.backend(self.plan.backend)
            self.backend.use(self.ctx.binding)

    def run(self) -> int:
        if self.plan.spec.uses_study:
            self._open_study()
        self.record.update(
            state=RunState.RUNNING,
            driver_pid=os.getpid(),
            driver_start=tree.started_at(os.getpid()),
            started_at=time.time(),
            finished_at=None,
            exit_code=None,
            stopped=None,
        )
        with Cancel(on_hangup=self.console.hang_up) as cancel:
            self.queues = {k: deque(t for t in self.todo if t.lane == k) for k in range(self.plan.lanes)}
            sent = 0
            while True:
                sent = self._forward(cancel, sent)
                if not cancel.count:
                    for lane, queue in self.queues.items():
                        if lane not in self.running and queue:
                            self._start(queue.popleft())
                self._read_curves()
                self._reap()
                if not self.running and (cancel.count or not any(self.queues.values())):
                    break
                time.sleep(POLL_SECONDS)
        return self._finish(cancel)

    def _finish(self, cancel: Cancel) -> int:
        view = collect(self.record, self.ctx.run_root)
        if cancel.count:
            state, code = RunState.CANCELLED, 128 + (cancel.signum or signal.SIGINT)
        elif self.bad_metric:
            # No table of unscored trials: the one line again, last, if trials that ran on said more after it.
            self.record.update(state=RunState.FAILED, exit_code=2, finished_at=time.time())
            if self.notes != self.said_blind:
                self._note(self.bad_metric, logging.ERROR)
            return 2
        elif all(r["state"] in (RunState.SUCCEEDED, RunState.PRUNED) for r in view["trials"]):
            state, code = RunState.SUCCEEDED, 0
        else:
            state, code = RunState.FAILED, 1
        self.record.update(state=state, exit_code=code, finished_at=time.time())
        view["state"] = state
        for line in render_text(view).splitlines():
            self.console.line(line)
        from launcher.sweeps.plot import write_plot

        write_plot(self.record, view)
        return code

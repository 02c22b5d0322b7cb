"""A sweep's Optuna study (`method: tpe`, or `early_stopping`): a journal file in the sweep's record directory, so
it lives on the run root and only kit (the sweep driver) reads and writes it; the trials' ranks only write lines.

kit asks the study for each trial's values as the trial starts (TPE's startup trials and grid/random values are
enqueued, so they run exactly as the dry-run shows), reports each line a running trial appends to its
metrics.jsonl, asks whether to prune, and tells the study how the trial ended: COMPLETE with its metric, PRUNED,
or FAIL (a failed, cancelled or lost trial: kit runs it again, with the same values, as a new study trial). So each
kit trial ends as exactly one COMPLETE or PRUNED study trial, whatever kill came between (reconcile()).

Optuna is imported here only, on first use: `kit --help` and `--dry-run` never import it."""

import math
import os
import warnings
from typing import Any, Literal, Optional

from launcher.spec.sweep import STUDY_JOURNAL as JOURNAL, Range, SweepSpec
from launcher.states import RunState


def _distribution(choice):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if not isinstance(choice, Range):
        return CategoricalDistribution(list(choice))
    if choice.integer:
        return IntDistribution(choice.low, choice.high)
    return FloatDistribution(float(choice.low), float(choice.high), log=choice.scale == "log")


def _pruner(spec: SweepSpec):
    from optuna import pruners

    es = spec.early_stopping
    if es is None:
        return pruners.NopPruner()
    if es.method == "asha":
        return pruners.SuccessiveHalvingPruner(min_resource=es.min_steps, reduction_factor=es.reduction_factor)
    if es.method == "hyperband":
        return pruners.HyperbandPruner(min_resource=es.min_steps, reduction_factor=es.reduction_factor)
    return pruners.MedianPruner(n_warmup_steps=es.min_steps)


def _readable(value):
    """A chosen float to four significant digits (as random search draws them): a readable table and argv, far
    below any tuning resolution."""
    return float(f"{value:.4g}") if isinstance(value, float) and math.isfinite(value) else value


class Study:
    def __init__(self, record_path: str, study_name: str, spec: SweepSpec):
        import optuna
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.spec = spec
        self.path = os.path.join(record_path, JOURNAL)
        storage = JournalStorage(JournalFileBackend(self.path))
        sampler: optuna.samplers.BaseSampler
        if spec.method == "tpe":
            sampler = optuna.samplers.TPESampler(seed=spec.seed, n_startup_trials=spec.chosen_from or 1)
        else:
            sampler = optuna.samplers.RandomSampler(seed=spec.seed)  # never used: every trial is enqueued
        direction: Literal["maximize", "minimize"] = "maximize" if spec.goal == "max" else "minimize"
        self.study = optuna.create_study(
            storage=storage,
            study_name=study_name,
            sampler=sampler,
            pruner=_pruner(spec),
            direction=direction,
            load_if_exists=True,
        )
        self.distributions = {name: _distribution(spec.choices(name)) for name in spec.parameters}
        self.live: dict[int, Any] = {}  # kit trial index -> optuna Trial being run
        self.steps: dict[int, set] = {}  # kit trial index -> the steps reported (a step is reported once)

    def ask(self, index: int, fixed: Optional[dict]) -> tuple[int, dict]:
        """A study trial for kit trial `index`: (its number, the values to run). `fixed`: values decided already
        (the plan's, or a re-run's recorded ones), else the sampler's choice."""
        if fixed is not None:
            self.study.enqueue_trial(fixed, skip_if_exists=False)
        trial = self.study.ask(self.distributions)
        trial.set_user_attr("kit_trial", index)
        self.live[index] = trial
        self.steps[index] = set()
        params = fixed if fixed is not None else {n: _readable(v) for n, v in trial.params.items()}
        return trial.number, {n: params[n] for n in self.spec.parameters}

    def report(self, index: int, step: int, value: float) -> None:
        trial = self.live.get(index)
        if trial is not None and step not in self.steps.setdefault(index, set()) and math.isfinite(value):
            self.steps[index].add(step)
            trial.report(value, step)

    def should_prune(self, index: int) -> bool:
        trial = self.live.get(index)
        return trial is not None and self.spec.early_stopping is not None and trial.should_prune()

    def tell(self, index: int, number: Optional[int], state: str, value: Optional[float]) -> None:
        """How kit trial `index` (study trial `number`) ended: succeeded with its metric, pruned, or else failed."""
        from optuna.trial import TrialState as OT

        self.live.pop(index, None)
        if number is None:
            return
        if state == RunState.SUCCEEDED and value is not None and math.isfinite(value):
            self.study.tell(number, value, skip_if_finished=True)
        elif state == RunState.PRUNED:
            self.study.tell(number, state=OT.PRUNED, skip_if_finished=True)
        else:
            self.study.tell(number, state=OT.FAIL, skip_if_finished=True)

    def reconcile(self, ended: dict[int, tuple[int, str, Optional[float]]]) -> None:
        """After kit died: every study trial still open is told how its kit trial ended (`ended`: kit trial
        index -> (study trial number, state, metric)); one whose kit trial did not end well fails (kit runs it
        again as a new study trial); an enqueued one never asked is taken and failed (so no ask picks it up)."""
        from optuna.trial import TrialState as OT

        for _ in self.study.get_trials(deepcopy=False, states=(OT.WAITING,)):
            self.study.tell(self.study.ask().number, state=OT.FAIL)
        by_number = {number: (index, state, value) for index, (number, state, value) in ended.items()}
        for frozen in self.study.get_trials(deepcopy=False, states=(OT.RUNNING,)):
            index, state, value = by_number.get(frozen.number, (None, "", None))
            self.tell(index if index is not None else -1, frozen.number, state, value)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.study.get_trials(deepcopy=False):
            out[t.state.name.lower()] = out.get(t.state.name.lower(), 0) + 1
        return out

"""(job, sweep spec, cluster, overrides) -> SweepPlan: every trial's LaunchPlan, built by the one plan function."""

import dataclasses
import hashlib
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Optional

from launcher.backends import registry
from launcher.errors import KitError, Option
from launcher.planning.build import build_plan
from launcher.planning.inputs import PlanInputs
from launcher.planning.model import LaunchPlan
from launcher.planning.placement import with_lane_ports
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.overrides import Overrides, apply_overrides, override_pairs
from launcher.spec.sweep import NOT_IDENTITY, SweepSpec
from launcher.sweeps.trials import Trial, check_fields, expand, trial_job

# Trial N of sweep S is the run `S-tN`: a sweep id shaped so would share its record directory with one.
TRIAL_ID = re.compile(r"-t\d+$")


@dataclass(frozen=True)
class TrialPlan:
    index: int
    run_id: str  # `<sweep id>-t<index>`: an ordinary run
    params: dict[str, Any]
    output_dir: str  # relative to the workdir; the metric is read from here
    plan: LaunchPlan
    lane: int = 0  # trials of one lane run one after another (lanes.py)
    placement: str = ""  # the lane's own GPUs or hosts, when lanes do not share them
    cluster: Optional[ClusterSpec] = None  # the lane's cluster the plan was built on (for the run record)
    inputs: Optional[PlanInputs] = None  # the planner's inputs: a restart's plan is built from them


@dataclass(frozen=True)
class SweepPlan:
    sweep_id: str
    job_name: str
    backend: str
    spec: SweepSpec
    trials: tuple[TrialPlan, ...]
    # One submission for every trial (a SLURM job array: backends/slurm/arrays.py), or None: the trials
    # run lane by lane.
    array: Optional[Any] = None
    lanes: int = 1  # how many trials run at once on local and SSH clusters (lanes.py)
    # The id an earlier kit gave this sweep (its metric was part of it), when the id is kit's, not --run-id's.
    earlier_id: Optional[str] = None

    def planned(self, trial: TrialPlan) -> bool:
        """Whether the trial's values are the plan's (grid, random, TPE's startup trials); else the study chooses
        them as the sweep goes (its plan here holds placeholder values from the seeded draw)."""
        chosen_from = self.spec.chosen_from
        return chosen_from is None or trial.index < chosen_from

    def to_dict(self) -> dict:
        data = {
            "sweep_id": self.sweep_id,
            "job_name": self.job_name,
            "backend": self.backend,
            "spec": self.spec.model_dump(mode="json"),
            "lanes": self.lanes,
            "parameter_names": list(self.spec.parameters),  # in the spec's order (JSON keys get sorted)
            "trials": [
                {
                    "index": t.index,
                    "run_id": t.run_id,
                    "params": t.params if self.planned(t) else None,
                    "output_dir": t.output_dir,
                    "lane": t.lane,
                    "placement": t.placement,
                }
                for t in self.trials
            ],
        }
        if self.array is not None:
            data["array"] = self.array.to_dict()
        return data


def sweep_id_for(
    job: JobSpec, spec: SweepSpec, cluster: ClusterSpec, overrides: Overrides, leave_out=NOT_IDENTITY
) -> str:
    """The same sweep (job, spec, cluster, overrides) always gets the same id, so running it again continues it
    (trials that already succeeded are skipped) instead of starting over under a new name."""
    # A sweep without early stopping keeps the id it had before kit had early stopping.
    leave_out = set(leave_out) | ({"early_stopping"} if spec.early_stopping is None else set())
    if spec.uses_study:
        # The study's direction and what it was told (which trials were pruned) follow the metric and goal: another
        # metric or goal is another study, so another sweep.
        leave_out -= {"metric", "goal"}
    material = json.dumps(
        [
            job.model_dump(mode="json", exclude={"sweep"}),
            spec.model_dump(mode="json", exclude=leave_out),
            cluster.model_dump(mode="json"),
            dataclasses.asdict(overrides),
        ],
        sort_keys=True,
    )
    return f"{job.name}-sweep-{hashlib.sha256(material.encode()).hexdigest()[:8]}"


def earlier_sweep_id(job: JobSpec, spec: SweepSpec, cluster: ClusterSpec, overrides: Overrides) -> str:
    """The id kit gave the same sweep before the metric and goal left it (records from then keep that id)."""
    return sweep_id_for(job, spec, cluster, overrides, leave_out={"max_failures"})


def _flags_in(words) -> set[str]:
    return {w.split("=", 1)[0] for w in words if isinstance(w, str) and w.startswith("--")}


def _check_overrides(spec: SweepSpec, overrides: Overrides) -> None:
    """No command-line override may fix what each trial sets: a swept field or argument, or the trial's output
    argument (else every trial would run the same values, or write to one directory)."""
    swept = set(spec.parameters)
    owned = {name for name in swept if name.startswith("--")} | {spec.output_arg}
    for key, value, said in override_pairs(overrides):
        if key in swept:
            raise KitError(said, f" fixes {key}, which the sweep varies; drop one of them")
        if key in ("args", "args+") and (clash := sorted(_flags_in(value if isinstance(value, list) else []) & owned)):
            raise KitError(said, f" sets {clash[0]}, which each trial of the sweep sets; drop it from the override")
    if clash := sorted(_flags_in(overrides.extra_args) & owned):
        raise KitError(f"-- {clash[0]} fixes an argument each trial of the sweep sets; drop it after --")


def plan_sweep(
    job: JobSpec,
    spec: SweepSpec,
    cluster: ClusterSpec,
    overrides: Overrides,
    sweep_id: Optional[str] = None,
    default_python: str = "python",
    user_deepspeed: Optional[dict] = None,
) -> SweepPlan:
    check_fields(job, spec)
    _check_overrides(spec, overrides)
    if sweep_id is not None and TRIAL_ID.search(sweep_id):
        raise KitError(
            Option("run_id", sweep_id),
            ": a sweep's id may not end in -t<N>, which names trial N of another sweep's run records; pick another id",
        )
    earlier_id = None if sweep_id else earlier_sweep_id(job, spec, cluster, overrides)
    sweep_id = sweep_id or sweep_id_for(job, spec, cluster, overrides)
    # The specs are resolved once; each trial's job is the resolved job with its values (no override fixes a
    # swept field: _check_overrides), and its plan is built on its lane's cluster with nothing left to apply.
    resolved_job, resolved_cluster = apply_overrides(job, cluster, overrides)
    expanded = expand(spec)
    outputs = [posixpath.join(spec.output_root, f"{sweep_id}-t{t.index}") for t in expanded]
    tjobs = [trial_job(resolved_job, spec, t, out) for t, out in zip(expanded, outputs)]
    placement = registry.placement(resolved_cluster.backend)
    lanes = with_lane_ports(placement, placement.lanes(resolved_cluster, tjobs, spec.parallel), sweep_id)
    trials = []
    for trial, output_dir, tjob in zip(expanded, outputs, tjobs):
        run_id, lane = f"{sweep_id}-t{trial.index}", trial.index % lanes.count
        plan = build_plan(
            tjob,
            lanes.clusters[lane],
            Overrides(),
            run_id,
            default_python=default_python,
            user_deepspeed=user_deepspeed,
        )
        inputs = PlanInputs.of(tjob, lanes.clusters[lane], run_id, default_python, user_deepspeed)
        trials.append(
            TrialPlan(
                trial.index,
                run_id,
                trial.params,
                output_dir,
                plan,
                lane,
                lanes.placement[lane],
                lanes.clusters[lane],
                inputs,
            )
        )
    # A sweep that learns (TPE, early stopping) starts each trial once a lane is free, with the values the study
    # chooses then, and stops it as its values come: never one job array submitted whole.
    array = None if spec.uses_study else placement.array_plan(sweep_id, spec.parallel, trials)
    return SweepPlan(
        sweep_id,
        job.name,
        resolved_cluster.backend,
        spec,
        tuple(trials),
        array,
        lanes=lanes.count,
        earlier_id=earlier_id,
    )


def replan(trial: TrialPlan, params: dict, job: JobSpec, spec: SweepSpec) -> TrialPlan:
    """Trial `trial` with the values the study chose for it: its plan built again, on its lane's cluster, by the
    same plan function (`job`: the resolved job); what was listed at the edge (an SSH sync) travels unchanged."""
    tjob = trial_job(job, spec, Trial(trial.index, params), trial.output_dir)
    inputs = trial.inputs
    python = inputs.default_python if inputs else "python"
    deepspeed = inputs.user_deepspeed if inputs else None
    cluster = trial.cluster
    assert cluster is not None  # plan_sweep gives each trial its lane's cluster
    plan = build_plan(tjob, cluster, Overrides(), trial.run_id, default_python=python, user_deepspeed=deepspeed)
    plan = dataclasses.replace(plan, sync=trial.plan.sync)
    return dataclasses.replace(
        trial, params=params, plan=plan, inputs=PlanInputs.of(tjob, cluster, trial.run_id, python, deepspeed)
    )


__all__ = ["SweepPlan", "replan", "TrialPlan", "Trial", "plan_sweep", "sweep_id_for"]

"""A sweep's trials: every parameter combination (grid) or a seeded draw (random), turned into ordinary jobs.

Pure: the same spec always gives the same trials in the same order, so a re-run finds its earlier trials."""

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

from launcher.errors import KitError
from launcher.spec.job import JobSpec
from launcher.spec.load import validate
from launcher.spec.overrides import with_key
from launcher.spec.sweep import Range, SweepSpec


@dataclass(frozen=True)
class Trial:
    index: int
    params: dict[str, Any]  # parameter name -> value, in the spec's order


def _draw(rng: random.Random, choice):
    if not isinstance(choice, Range):
        return rng.choice(choice)
    if choice.integer:
        return rng.randint(int(choice.low), int(choice.high))  # both ints: choice.integer
    if choice.scale == "log":
        value = math.exp(rng.uniform(math.log(choice.low), math.log(choice.high)))
    else:
        value = rng.uniform(choice.low, choice.high)
    # Four significant digits: a readable table and argv, far below any tuning resolution.
    return float(f"{value:.4g}")


def expand(spec: SweepSpec) -> list[Trial]:
    names = list(spec.parameters)
    if spec.method == "grid":
        combos = itertools.product(*(spec.choices(n) for n in names))
        return [Trial(i, dict(zip(names, combo))) for i, combo in enumerate(combos)]
    rng = random.Random(spec.seed)
    assert spec.trials is not None  # random and tpe need it (SweepSpec's validator)
    return [Trial(i, {n: _draw(rng, spec.choices(n)) for n in names}) for i in range(spec.trials)]


def _with_arg(args: list[str], flag: str, value) -> list[str]:
    """`args` with `flag` set to `value`: an earlier `flag X` or `flag=X` is replaced, not repeated.
    A boolean switches a bare flag (`--no-bucketing: [true, false]`) on or off."""
    out, skip = [], False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        if word == flag:
            bare = i + 1 >= len(args) or args[i + 1].startswith("--")
            skip = not bare
            continue
        if word.startswith(flag + "="):
            continue
        out.append(word)
    if value is True:
        return out + [flag]
    if value is False:
        return out
    return out + [flag, str(value)]


def trial_job(job: JobSpec, spec: SweepSpec, trial: Trial, output_dir: str) -> JobSpec:
    """The job one trial runs: the sweep's values applied, its own output directory, no sweep section."""
    data = job.model_dump(exclude_unset=True)
    data.pop("sweep", None)
    args = list(job.args)
    for name, value in trial.params.items():
        if name.startswith("--"):
            args = _with_arg(args, name, value)
        else:
            data = with_key(data, name, value)
    data["args"] = _with_arg(args, spec.output_arg, output_dir)
    return validate(JobSpec, data, f"sweep trial {trial.index} ({describe(trial.params)})")


def describe(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def check_fields(job: JobSpec, spec: SweepSpec) -> None:
    """Every job-field parameter must name a real job field: one line naming the parameter otherwise."""
    known = set(JobSpec.model_fields)
    for name in spec.parameters:
        if name.startswith("--"):
            continue
        head, _, rest = name.partition(".")
        if head not in known:
            raise KitError(
                f"sweep.parameters.{name}: {head!r} is not a job field; use a training argument "
                f"(--{head.replace('_', '-')}) or one of: {', '.join(sorted(known))}"
            )
        inner = JobSpec.model_fields[head].annotation
        sub = getattr(inner, "model_fields", None)
        if rest and sub is not None and rest.split(".")[0] not in sub:
            raise KitError(
                f"sweep.parameters.{name}: {head} has no field {rest.split('.')[0]!r} (it has {', '.join(sorted(sub))})"
            )
        if rest and sub is None and head != "env":
            raise KitError(f"sweep.parameters.{name}: {head} is not a section with fields")

"""The sweep spec (`sweep:` in a job YAML, or a file given with `--sweep`): strict, like every kit schema."""

import math
import re
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, StringConstraints, ValidationError, field_validator, model_validator

from launcher.spec.base import StrictModel

# A training argument (`--lr`) or a job field (`mixed_precision`, `deepspeed.zero_stage`, `env.OMP_NUM_THREADS`).
ARG_PATTERN = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9_-]*$")
FIELD_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# Job fields a trial may not change: they name the program or the sweep itself.
FIXED_FIELDS = ("name", "entrypoint", "args", "secret_env", "sweep")
# A metric is a path into the trial's metrics.json: `test.accuracy`, `evals.-1.accuracy` (the last validation).
METRIC_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.(-?[0-9]+|[A-Za-z_][A-Za-z0-9_]*))*$"

# Fields that say how trials are scored or when to stop launching, not what a trial runs: left out of the sweep's
# id, so the same sweep with other values of these continues it (a corrected metric re-scores the trials that ran).
NOT_IDENTITY = frozenset({"metric", "goal", "max_failures"})

# A sweep that learns: each trial's learning curve, lines appended to <output dir>/CURVE_FILE (sweeps/curves.py),
# and the study, a journal file in the sweep's record directory (sweeps/study.py).
CURVE_FILE = "metrics.jsonl"
STUDY_JOURNAL = "study.journal"


def line_key(metric: str) -> str:
    """The key a curve line holds the metric under: its last name (`evals.-1.accuracy` -> `accuracy`)."""
    names = [p for p in metric.split(".") if not p.lstrip("-").isdigit()]
    return names[-1] if names else metric


# At most this many trials in one sweep, grid or random: a grid's size is counted before anything is expanded.
MAX_TRIALS = 10000

Scalar = Union[bool, int, float, str]
Number = Union[int, float]


class Range(StrictModel):
    """A continuous (or, with two integer ends, integer) range for random search."""

    low: Number
    high: Number
    scale: Literal["linear", "log"] = "linear"

    @field_validator("low", "high", mode="before")
    @classmethod
    def yaml_exponent(cls, value):
        """YAML 1.1 reads `1e-5` (no dot) as a string; in a range it can only mean the number."""
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return value
        return value

    @model_validator(mode="after")
    def ordered(self):
        if not self.low < self.high:
            raise ValueError(f"empty range: low ({self.low}) must be below high ({self.high})")
        if self.scale == "log" and self.low <= 0:
            raise ValueError(f"log scale needs low > 0, got {self.low}")
        if not all(math.isfinite(v) for v in (self.low, self.high)):
            raise ValueError("range ends must be finite numbers")
        return self

    @property
    def integer(self) -> bool:
        return isinstance(self.low, int) and isinstance(self.high, int) and self.scale == "linear"


class Values(StrictModel):
    values: Annotated[list[Scalar], Field(min_length=1)]


ParamSpec = Union[Annotated[list[Scalar], Field(min_length=1)], Values, Range]


class EarlyStopping(StrictModel):
    """Stop trials whose intermediate values (lines of <output dir>/metrics.jsonl) are poor (Optuna's pruners):
    `asha` (asynchronous successive halving), `hyperband`, or `median` (below the median of earlier trials at the
    same step). No trial is stopped before `min_steps`; `reduction_factor`: asha's and hyperband's rung ratio."""

    method: Literal["asha", "hyperband", "median"]
    min_steps: Annotated[int, Field(ge=1)] = 1
    reduction_factor: Annotated[int, Field(ge=2)] = 3


class SweepSpec(StrictModel):
    method: Literal["grid", "random", "tpe"]
    # Random search and TPE: how many trials to run.
    trials: Optional[Annotated[int, Field(ge=1, le=MAX_TRIALS)]] = None
    seed: int = 0
    metric: Annotated[str, StringConstraints(pattern=METRIC_PATTERN)]
    goal: Literal["max", "min"]
    parallel: Annotated[int, Field(ge=1)] = 1
    parameters: Annotated[dict[str, ParamSpec], Field(min_length=1)]
    # Each trial writes to <output_root>/<trial run id>, passed to the program as `<output_arg> <dir>`; the
    # metric is read from <dir>/<metrics_file>.
    output_arg: Annotated[str, StringConstraints(pattern=ARG_PATTERN.pattern)] = "--output-dir"
    output_root: Annotated[str, StringConstraints(min_length=1)] = "outputs"
    metrics_file: Annotated[str, StringConstraints(min_length=1)] = "metrics.json"
    # Stop launching trials once this many in a row failed the same way (the trials running then finish); null:
    # never. A sweep whose trials all fail the same way (a typo in the script) stops after a few, not after all.
    max_failures: Optional[Annotated[int, Field(ge=1)]] = 3
    # Prune poor trials as they report (a study in the sweep's record directory: sweeps/study.py).
    early_stopping: Optional[EarlyStopping] = None

    @field_validator("parameters", mode="before")
    @classmethod
    def mappings(cls, params):
        """A mapping is a range, or `{values: [...]}`: validate it as that, so its own error is the one shown
        (not the union's "should be a list")."""
        if not isinstance(params, dict):
            return params
        out = {}
        for name, p in params.items():
            if isinstance(p, dict):
                model = Values if "values" in p else Range
                try:
                    p = model.model_validate(p)
                except ValidationError as e:
                    err = e.errors()[0]
                    where = ".".join(str(x) for x in err["loc"])
                    raise ValueError(
                        f"{name}{'.' + where if where else ''}: {err['msg'].removeprefix('Value error, ')}"
                    ) from None
            out[name] = p
        return out

    @field_validator("parameters")
    @classmethod
    def names(cls, params: dict) -> dict:
        for name in params:
            if name.startswith("-"):
                if not ARG_PATTERN.fullmatch(name):
                    raise ValueError(f"{name!r} is not a training argument like --lr")
            elif not FIELD_PATTERN.fullmatch(name):
                raise ValueError(
                    f"{name!r} is neither a training argument (--lr) nor a job field "
                    f"(mixed_precision, deepspeed.zero_stage)"
                )
            elif name.split(".")[0] in FIXED_FIELDS:
                raise ValueError(
                    f"{name!r} cannot vary between trials; sweep training arguments (--lr) "
                    f"or distribution fields (mixed_precision, deepspeed.zero_stage) instead"
                )
        return params

    @model_validator(mode="after")
    def consistent(self):
        ranges = [name for name, p in self.parameters.items() if isinstance(p, Range)]
        if self.method == "grid":
            if ranges:
                raise ValueError(
                    f"parameters.{ranges[0]}: a grid needs a list of values; ranges are for method: random or tpe"
                )
            if self.trials is not None:
                raise ValueError("trials is for method: random; a grid runs every combination")
            size = math.prod(len(self.choices(name)) for name in self.parameters)
            if size > MAX_TRIALS:
                sizes = " x ".join(str(len(self.choices(name))) for name in self.parameters)
                raise ValueError(
                    f"parameters: a grid of {sizes} = {size} trials is above the cap of {MAX_TRIALS}; "
                    f"sweep fewer values, or use method: random with trials: N"
                )
        elif self.trials is None:
            raise ValueError(f"method {self.method} needs trials (how many to run)")
        if self.output_arg in self.parameters:
            raise ValueError(f"parameters.{self.output_arg}: each trial gets its own output directory; do not sweep it")
        return self

    @property
    def uses_study(self) -> bool:
        """The trials are asked of and told to an Optuna study (model-based search, or early stopping)."""
        return self.method == "tpe" or self.early_stopping is not None

    @property
    def chosen_from(self) -> Optional[int]:
        """TPE: the first trial whose values the study chooses as the sweep goes; the ones before it (a third of
        the trials, at most 10: TPE's startup) are the seeded random draw the dry-run shows. None: every trial's
        values are planned (grid, random)."""
        if self.method != "tpe":
            return None
        return max(1, min(10, (self.trials or 0) // 3))

    def choices(self, name: str):
        """The parameter's values list, or its Range."""
        p = self.parameters[name]
        return p.values if isinstance(p, Values) else p

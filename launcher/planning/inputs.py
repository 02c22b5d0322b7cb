"""What the planner was given for one run, kept beside its plan as plain data (it travels pickled to a detached
supervisor or from the forked planner, which never hand over schema objects), so that attempt k's plan is built
by the same pure function from the same inputs, wherever the run is supervised."""

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from launcher.planning.attempt import Attempt
from launcher.planning.model import LaunchPlan


@dataclass(frozen=True)
class PlanInputs:
    job: dict  # the resolved job spec's fields as given (secret values too, as in the plan)
    cluster: dict  # the resolved cluster spec's, likewise
    run_id: str
    default_python: str
    user_deepspeed: Optional[dict] = None
    failed_hosts: tuple = ()  # ((host, why), ...) at submit time: every attempt is placed away from them

    @classmethod
    def of(
        cls,
        job,
        cluster,
        run_id: str,
        default_python: str,
        user_deepspeed: Optional[dict] = None,
        failed_hosts: tuple = (),
    ):
        """From validated specs (overrides applied). Only the fields that were set: validating them again gives
        the same specs (a validator that looks at which fields were set sees the same ones)."""
        return cls(
            job.model_dump(exclude_unset=True),
            cluster.model_dump(exclude_unset=True),
            run_id,
            default_python,
            user_deepspeed,
            failed_hosts,
        )


def plan_attempt(inputs: PlanInputs, first: LaunchPlan, attempt: Attempt) -> LaunchPlan:
    """Attempt `attempt` of the run whose first plan is `first`, built by the planner. The files a sync copies are
    the ones listed when the run was submitted (at the edge, on this machine's disk): they travel unchanged."""
    from launcher.planning.build import build_plan
    from launcher.spec import ClusterSpec, JobSpec, Overrides

    plan = build_plan(
        JobSpec.model_validate(inputs.job),
        ClusterSpec.model_validate(inputs.cluster),
        Overrides(),
        inputs.run_id,
        inputs.default_python,
        inputs.user_deepspeed,
        attempt,
        inputs.failed_hosts,
    )
    return dataclasses.replace(plan, sync=first.sync)


def replanner(inputs: Optional[PlanInputs], first: LaunchPlan) -> Optional[Callable[[Attempt], LaunchPlan]]:
    """How attempt k's plan is built for this run (None: it cannot be, and the run is not restarted)."""
    if inputs is None:
        return None
    return lambda attempt: plan_attempt(inputs, first, attempt)


__all__ = ["PlanInputs", "plan_attempt", "replanner"]

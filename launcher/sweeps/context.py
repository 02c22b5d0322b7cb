"""What every trial of a sweep shares (the resolved specs, where records go, the backend's binding), and the specs a
trial's run record keeps."""

from dataclasses import dataclass

from launcher.records import spec_record
from launcher.spec.cluster import ClusterSpec
from launcher.spec.job import JobSpec
from launcher.spec.sweep import SweepSpec
from launcher.sweeps.trials import Trial, trial_job


@dataclass(frozen=True)
class SweepContext:
    job: JobSpec  # the resolved job (overrides applied); each trial applies its values on top
    cluster: ClusterSpec  # the resolved cluster
    spec: SweepSpec  # the sweep spec
    base_dir: str  # where `kit submit` ran
    run_root: str  # absolute: the sweep's and the trials' records
    binding: object  # the backend's settings (Placement.binding)


def trial_specs(ctx: SweepContext, trial) -> tuple[dict, dict]:
    """(job record, cluster record) of one trial's run record: the trial's own job, its lane's cluster."""
    tjob = trial_job(ctx.job, ctx.spec, Trial(trial.index, trial.params), trial.output_dir)
    return spec_record(tjob, trial.plan), spec_record(trial.cluster or ctx.cluster, trial.plan)

"""Where a sweep comes from: the job's `sweep:` section, or a file given with `--sweep`."""

from typing import Optional

from launcher.errors import KitError
from launcher.spec.job import JobSpec
from launcher.spec.load import parse_yaml, read_text, validate
from launcher.spec.sweep import SweepSpec


def load_sweep_file(path: str) -> SweepSpec:
    """A sweep file holds the spec at its top level (or under one `sweep:` key, like a job file's section)."""
    data = parse_yaml(read_text(path, "sweep file"), path)
    if set(data) == {"sweep"} and isinstance(data["sweep"], dict):
        data = data["sweep"]
    return validate(SweepSpec, data, f"{path}: sweep")


def sweep_of(job: JobSpec, job_path: str, sweep_path: Optional[str]) -> Optional[SweepSpec]:
    if sweep_path is None:
        return job.sweep
    if job.sweep is not None:
        raise KitError(f"--sweep {sweep_path}: job {job_path} has a sweep section already; "
                       f"drop --sweep or the job's sweep section")
    return load_sweep_file(sweep_path)

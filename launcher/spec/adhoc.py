"""A job built from the command line (`kit submit train.py ...`, `kit submit -m pkg.train ...`): no YAML needed.
The flags (--nodes, --gpus, --strategy, --set deepspeed.zero_stage=3, -- ARGS) then shape it as they shape a
YAML job; the dry-run shows the job built, as a file the user could save."""

import os
import re
from typing import Optional

from launcher.errors import KitError
from launcher.spec.job import JobSpec
from launcher.spec.load import validate


def is_script(job: Optional[str]) -> bool:
    """A job given as a Python file rather than a job spec."""
    return job is not None and job.endswith(".py")


def _name(stem: str) -> str:
    """A job name (NAME_PATTERN) from a script's or module's name: `my train.py` -> `my-train`."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-._")[:64]
    return name or "job"


def module_for(path: str) -> str:
    """The module name a file path means: `pkg/file.py` -> `pkg.file`."""
    return os.path.normpath(path).removesuffix(".py").replace(os.sep, ".").strip(".")


def command_line_job(script: Optional[str] = None, module: Optional[str] = None) -> JobSpec:
    """The job of `kit submit SCRIPT.py` / `kit submit -m MODULE`, before the flags are applied."""
    if module is not None and ("/" in module or module.endswith(".py")):
        raise KitError(
            f"-m {module}: -m takes a module name ({module_for(module)}), not a path; use kit submit "
            f"{module if module.endswith('.py') else module + '.py'} or -m {module_for(module)}"
        )
    if module is not None:
        data = {"name": _name(module.removesuffix(".__main__").rsplit(".", 1)[-1]), "entrypoint": {"module": module}}
        return validate(JobSpec, data, f"-m {module}")
    assert script is not None  # given one of the two (core/prepare.job_of)
    if os.path.isdir(script):
        raise KitError(f"{script}: is a directory; give the script to run (train.py) or -m PACKAGE")
    data = {"name": _name(os.path.splitext(os.path.basename(script))[0]), "entrypoint": {"script": script}}
    return validate(JobSpec, data, script)


def built_job_yaml(job: JobSpec) -> str:
    """The job as a YAML file the user could save and submit (only the fields set)."""
    import yaml

    data = job.model_dump(mode="json", exclude_unset=True)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)


__all__ = ["is_script", "command_line_job", "built_job_yaml"]

"""What a SLURM run's record keeps of its own (its handle): the job id, where its files are as the SLURM commands
see them, the login host (if any) and how to reach it, the requeue budget and count, SLURM's last word."""

import re
from dataclasses import dataclass
from typing import Optional

from launcher.backends.handle import Handle
from launcher.wellformed import HOST_NAME, ONE_LINE, checked, integer, mapping, text

JOB_ID = re.compile(r"^\d+(_\d+)?$")  # a SLURM job id, or <array id>_<task>


@dataclass(frozen=True)
class SlurmHandle(Handle):
    job_id: Optional[str] = checked(None, lambda v: text(v, JOB_ID))
    array_job_id: Optional[str] = checked(None, lambda v: text(v, JOB_ID))
    workdir: Optional[str] = checked(None, text)  # the cluster's workdir, as SLURM sees it
    run_dir: Optional[str] = checked(None, lambda v: text(v, ONE_LINE))  # relative to workdir
    max_requeues: Optional[int] = checked(None, integer)
    login_host: Optional[str] = checked(None, lambda v: text(v, HOST_NAME))
    login_ssh: Optional[dict] = checked(None, mapping)  # connection settings, no secrets
    restarts: int = checked(0, lambda v: integer(v) or 0)  # SLURM's requeue count
    slurm_state: Optional[str] = checked(None, text)

    def scheduler_job_id(self) -> Optional[str]:
        return self.job_id


HANDLE = SlurmHandle

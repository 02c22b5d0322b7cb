"""Shared helpers for the launcher tests: small job/cluster specs and plans built from them, no I/O."""

from launcher.planning.build import build_plan
from launcher.spec import ClusterSpec, JobSpec, Overrides

RUN_ID = "test-run"
PYTHON = "/opt/kit/venv/bin/python"
LAUNCH_MODULE = ("-m", "accelerate.commands.launch")

LOCAL_CPU = {"name": "local", "backend": "local", "gpus_per_node": 0, "procs_per_node": 1,
             "cpu_threads_per_process": 1}
LOCAL_GPU = {"name": "local-gpu", "backend": "local", "gpus_per_node": 8}
SSH_GPU = {
    "name": "gpu-boxes", "backend": "ssh", "gpus_per_node": 8, "workdir": "/srv/kit",
    "hosts": [{"name": "gpu-a", "address": "10.0.0.11", "gpus": 8}, {"name": "gpu-b", "address": "10.0.0.12"}],
    "ssh": {"user": "train"},
}
SLURM_GPU = {
    "name": "hpc", "backend": "slurm", "gpus_per_node": 4, "workdir": "/shared/kit",
    "setup": ["module load cuda/12.4"], "master_port": {"base": 29500, "span": 1000},
    "slurm": {"partition": "gpu", "account": "ml", "time": "04:00:00", "extra_sbatch": ["--exclusive"]},
}


def job(**fields) -> JobSpec:
    """A valid job: `train` module with two args, plus whatever fields the test sets."""
    data = {"name": "t", "entrypoint": {"module": "train"}, "args": ["--epochs", "1"], **fields}
    return JobSpec.model_validate(data)


def cluster(base: dict, **fields) -> ClusterSpec:
    return ClusterSpec.model_validate({**base, **fields})


def plan(job_spec: JobSpec, cluster_spec: ClusterSpec, run_id: str = RUN_ID, user_deepspeed=None,
         attempt=None, failed_hosts=(), **overrides):
    extra = {"attempt": attempt} if attempt is not None else {}
    extra["failed_hosts"] = failed_hosts
    return build_plan(job_spec, cluster_spec, Overrides(**overrides), run_id, default_python=PYTHON,
                      user_deepspeed=user_deepspeed, **extra)


def launch_args(node) -> list[str]:
    """The words after `python -m accelerate.commands.launch`, i.e. what accelerate's parser sees."""
    argv = list(node.argv)
    assert tuple(argv[1:3]) == LAUNCH_MODULE, argv
    return argv[3:]


def resolve_runtime(words, values: dict[str, str]) -> list[str]:
    """Replace `${VAR}` words (resolved inside each SLURM task) by concrete values, as the task's shell would."""
    return [values.get(w[2:-1], w) if w.startswith("${") and w.endswith("}") else w for w in words]

"""Launching `python -m train` for the tests.

`run_job` goes through `kit submit` itself (job YAML -> plan -> local backend), so the tests exercise exactly the
configs and commands kit generates.  `run_misconfigured` hand-writes launches kit never generates (the CPU traps
that train every process alone) to show that the world check catches them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _misconfigured_yaml(tmp: Path, world: int, distributed_type: str) -> Path:
    path = tmp / "accelerate_by_hand.yaml"
    path.write_text("\n".join(["compute_environment: LOCAL_MACHINE", "num_machines: 1", f"num_processes: {world}",
                               "machine_rank: 0", "main_training_function: main", "mixed_precision: 'no'",
                               f"distributed_type: {distributed_type}", "use_cpu: true"]) + "\n")
    return path


def link_reference_module(directory) -> None:
    """`directory`/train: a link to this checkout's train/, the reference module as a user's project holds it. The
    nodes run `python -m train` from their workdir; installing kit puts no `train` on any path (issue 36)."""
    link = os.path.join(directory, "train")
    if not os.path.lexists(link):
        os.symlink(REPO / "train", link)


def job_spec(strategy: str, train_args: list[str], world: int, machines: int, stage: int,
             env: dict | None, job_fields: dict | None = None) -> dict:
    """The job YAML for a CPU run of the training module (DeepSpeed offloads to CPU, as on a GPU-less node)."""
    job = {"name": "train-test", "entrypoint": {"module": "train"}, "args": list(train_args), "nodes": machines,
           "gpus_per_node": 0, "procs_per_node": world // machines, "strategy": strategy,
           "env": {"PYTHONUNBUFFERED": "1", **(env or {})}, **(job_fields or {})}
    if strategy == "deepspeed":
        job["deepspeed"] = {"zero_stage": stage, "offload_optimizer": "cpu", "gradient_clipping": 1.0,
                            **({"offload_param": "cpu", "zero3_init": True} if stage == 3 else {})}
    return job


def kit_submit_argv(tmp: Path, strategy: str, train_args: list[str], world: int = 2, machines: int = 1,
                    stage: int = 2, extra_env: dict | None = None, job_fields: dict | None = None) -> list[str]:
    """Write the job YAML; the `kit submit` command line that runs it on the local cluster, from `tmp`: the nodes'
    workdir, which holds the reference module."""
    link_reference_module(tmp)
    spec = tmp / f"job-{strategy}-{len(list(tmp.glob('job-*.yaml')))}.yaml"
    spec.write_text(yaml.safe_dump(job_spec(strategy, train_args, world, machines, stage, extra_env, job_fields)))
    return [PYTHON, "-m", "launcher", "submit", str(spec), "--cluster", str(REPO / "cluster_configs" / "local.yaml")]


def run_job(tmp: Path, strategy: str, train_args: list[str], world: int = 2, machines: int = 1,
            stage: int = 2, extra_env: dict | None = None, timeout: float = 600,
            job_fields: dict | None = None) -> subprocess.CompletedProcess:
    """`kit submit` the job on the local cluster (one launcher per simulated node) and wait for it."""
    argv = kit_submit_argv(tmp, strategy, train_args, world, machines, stage, extra_env, job_fields)
    try:
        return subprocess.run(argv, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:  # kit tears the run down when it is killed
        return subprocess.CompletedProcess(argv, -9, exc.stdout or "", "")


def run_misconfigured(tmp: Path, train_args: list[str], world: int = 2, distributed_type: str = "MULTI_GPU",
                      flags: tuple[str, ...] = ("--multi_gpu",), use_cpu_env: bool = True,
                      timeout: float = 300) -> subprocess.CompletedProcess:
    """A hand-written single-machine launch with one of the CPU traps kit avoids: accelerate's MULTI_CPU without
    mpirun, or --multi_gpu without ACCELERATE_USE_CPU, starts every process alone and exits 0."""
    env = {k: v for k, v in os.environ.items() if k != "ACCELERATE_USE_CPU"}
    if use_cpu_env:
        env["ACCELERATE_USE_CPU"] = "1"
    env.update({"KIT_EXPECTED_WORLD_SIZE": str(world), "KIT_EXPECTED_NUM_MACHINES": "1",
                "KIT_EXPECTED_STRATEGY": "ddp", "KIT_EXPECTED_MIXED_PRECISION": "no", "KIT_EXPECTED_DEVICE": "cpu",
                "KIT_RUN_ID": "by-hand", "PYTHONUNBUFFERED": "1"})
    argv = [PYTHON, "-m", "accelerate.commands.launch", "--config_file",
            str(_misconfigured_yaml(tmp, world, distributed_type)), "--num_processes", str(world),
            "--main_process_port", str(free_port()), *flags, "--num_cpu_threads_per_process", "1",
            "-m", "train", *train_args]
    try:
        return subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(argv, -9, exc.stdout or "", "")


def run_private_nodes(tmp: Path, train_args: list[str], extra_env: dict | None = None,
                      timeout: float = 300) -> list[subprocess.CompletedProcess]:
    """Two 'nodes' that share no files: each launcher (the DDP launch kit renders for a CPU node) runs in its own
    directory, and relative paths in `train_args` resolve there."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "ACCELERATE_"))}
    env.update({"ACCELERATE_USE_CPU": "1", "KIT_EXPECTED_WORLD_SIZE": "2", "KIT_EXPECTED_NUM_MACHINES": "2",
                "KIT_EXPECTED_STRATEGY": "ddp", "KIT_EXPECTED_MIXED_PRECISION": "no", "KIT_EXPECTED_DEVICE": "cpu",
                "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO), **(extra_env or {})})
    procs = []
    for rank in (0, 1):
        home = tmp / f"host{rank}"
        home.mkdir(exist_ok=True)
        argv = [PYTHON, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_machines", "2", "--machine_rank",
                str(rank), "--main_process_ip", "127.0.0.1", "--main_process_port", str(port), "--num_processes",
                "2", "--num_cpu_threads_per_process", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                "-m", "train", *train_args]
        procs.append(subprocess.Popen(argv, cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    results = []
    for proc in procs:
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, _ = proc.communicate()
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, ""))
    return results
